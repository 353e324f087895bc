// The ledger store of a database: one per ORM (one per app), so that every ledger write of the
// process shares it (on SQLite, one group-commit writer for transfers, mints and the rest).
import type { Orm } from '../../../db/orm.ts';
import { databaseKindOf } from '../../../db/platform.ts';
import type { LedgerStore } from './plan.ts';
import { createPostgresLedgerStore } from './postgres.ts';
import { createSqliteLedgerStore } from './sqlite.ts';

const stores = new WeakMap<Orm, LedgerStore>();

/** The only place the ledger looks at the database kind: to pick its store. */
export function ledgerStoreOf(orm: Orm): LedgerStore {
  let store = stores.get(orm);
  if (!store) {
    store =
      databaseKindOf(orm.em.getPlatform()) === 'postgresql'
        ? createPostgresLedgerStore(orm)
        : createSqliteLedgerStore(orm);
    stores.set(orm, store);
  }
  return store;
}

export * from './plan.ts';

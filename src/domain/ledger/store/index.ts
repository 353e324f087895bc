// The ledger's database: the database handle (src/db/database.ts: the ORM, the read statements, the
// commit counter), the one ledger store over it and the commit hook the store announces its commits
// on. Built once per app at start-up (src/app.ts) and passed to what reads and writes the ledger, so
// that every ledger write of the process shares one store (on SQLite, one group-commit writer for
// transfers, mints and the rest) and one hook.
import type { Database } from '../../../db/database.ts';
import type { Orm } from '../../../db/orm.ts';
import { databaseKindOf } from '../../../db/platform.ts';
import { CommitHook } from '../../../events/commit-hook.ts';
import type { LedgerStore } from './plan.ts';
import { createPostgresLedgerStore } from './postgres.ts';
import { createSqliteLedgerStore } from './sqlite.ts';

export interface LedgerDatabase extends Database {
  /** The one ledger store of this database in this process. */
  readonly store: LedgerStore;
  /** Where the store announces what each of its transactions committed (src/after-commit.ts listens). */
  readonly commits: CommitHook;
}

/** The ledger's database over an open database: one per app (a second would be a second writer). */
export function ledgerDatabase(database: Database): LedgerDatabase {
  const commits = new CommitHook();
  return { ...database, commits, store: createLedgerStore(database.orm, commits) };
}

/** The only place the ledger looks at the database kind: to pick its store. */
function createLedgerStore(orm: Orm, commits: CommitHook): LedgerStore {
  return databaseKindOf(orm.em.getPlatform()) === 'postgresql'
    ? createPostgresLedgerStore(orm, commits)
    : createSqliteLedgerStore(orm, commits);
}

export * from './plan.ts';

// The Reads of a database (./port.ts): the adapter of its kind, built once per ledger.
import type { Orm } from '../../../db/orm.ts';
import { databaseKindOf } from '../../../db/platform.ts';
import type { ReadReplicas } from '../../../db/replicas.ts';
import type { Reads } from './port.ts';
import { createPostgresReads } from './postgres.ts';
import { createSqliteReads } from './sqlite/index.ts';

/**
 * The only place the reads look at the database kind: to pick their adapter. `replicas`
 * (PostgreSQL, DATABASE_READ_URLS): the reads go through their routing (src/db/replicas.ts).
 */
export function createReads(orm: Orm, replicas?: ReadReplicas): Reads {
  return databaseKindOf(orm.em.getPlatform()) === 'postgresql'
    ? createPostgresReads(orm, replicas)
    : createSqliteReads(orm);
}

export * from './port.ts';
export { assetChangeKeys, assetOwnersChangeKeys } from './queries.ts';

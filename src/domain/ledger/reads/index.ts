// The Reads of a database (./port.ts): the adapter of its kind, built once per ledger.
import type { Database } from '../../../db/database.ts';
import { databaseKindOf } from '../../../db/platform.ts';
import type { ReadReplicas } from '../../../db/replicas.ts';
import type { Reads } from './port.ts';
import { createPostgresReads } from './postgres.ts';
import { createSqliteReads } from './sqlite/index.ts';

/**
 * The only place the reads look at the database kind: to pick their adapter. `replicas`
 * (PostgreSQL, DATABASE_READ_URLS): the reads go through their routing (src/db/replicas.ts).
 */
export function createReads(database: Database, replicas?: ReadReplicas): Reads {
  return databaseKindOf(database.orm.em.getPlatform()) === 'postgresql'
    ? createPostgresReads(database, replicas)
    : createSqliteReads(database);
}

export * from './port.ts';
export { assetChangeKeys, assetOwnersChangeKeys } from './queries.ts';

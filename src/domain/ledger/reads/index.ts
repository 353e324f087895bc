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
 * `viewsKept`: the most fixed views each listing cache keeps (ASSET_VIEW_CACHE_ENTRIES).
 */
export function createReads(database: Database, replicas?: ReadReplicas, viewsKept?: number): Reads {
  return databaseKindOf(database.orm.em.getPlatform()) === 'postgresql'
    ? createPostgresReads(database, replicas, viewsKept)
    : createSqliteReads(database, viewsKept);
}

export * from './port.ts';
export { assetChangeKeys, assetOwnersChangeKeys } from './queries.ts';

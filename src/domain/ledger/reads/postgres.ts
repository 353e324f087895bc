// The PostgreSQL Reads adapter (./port.ts): every read on the event loop (the driver's I/O is
// asynchronous already) over named prepared statements on the ORM's pool
// (../../../db/read-statements.ts). The listings are ./holdings.ts with a fixed-view cache of the
// adapter's own (no other process's commit to watch for: every write reaches the asset's
// `metadata_version`, which each listing row carries). With read replicas (DATABASE_READ_URLS) every
// statement goes through their routing (../../../db/replicas.ts): a replica's, or the primary's.
import type { Database } from '../../../db/database.ts';
import type { ReadReplicas } from '../../../db/replicas.ts';
import { listingReads } from './holdings.ts';
import type { Reads } from './port.ts';
import { assetById, assetOwners, holdingListing } from './queries.ts';
import { zeroBalanceOf } from './zero.ts';

export function createPostgresReads(
  { orm, reads }: Database,
  replicas?: ReadReplicas,
  viewsKept?: number,
): Reads {
  const statements = replicas ? replicas.statements() : reads;
  const zero = zeroBalanceOf(orm);
  const listings = listingReads(statements, zero, () => 0, { viewsKept });
  return {
    ...listings,
    asset: (id) => assetById(statements, id),
    assetOwners: (assetId, options) => assetOwners(statements, zero, assetId, options),
    listing: (request) => holdingListing(listings, request),
  };
}

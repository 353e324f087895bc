import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * Issue 34, PostgreSQL only: the newest event naming an NFT, one row per NFT that has events (none
 * for currencies, whose events fill a page near any point; the table stays empty on SQLite, whose log
 * is one table). An NFT has a few events, so its event read's page never fills, and on a log
 * partitioned by id (src/db/outbox-partitions.ts) it went on descending into every partition up to
 * the relay's position; it now stops at this id (src/events/reads.ts) and the partitions after it are
 * never read. Written by the ledger function with the events, in their transaction
 * (src/db/functions/gats_apply_plan.sql: never lowered), so a reader that sees an event sees a bound
 * at or past it. A narrow table of its own rather than a column of `asset`: a batch mint inserts the
 * NFT rows before their events draw ids, and a second version of each wide asset row would double its
 * pages. No foreign key (an asset is never deleted; the check would cost each insert a lookup).
 * Declared here so the schema diff knows the table.
 */
export const AssetLastEvent = defineEntity({
  name: 'AssetLastEvent',
  properties: {
    assetId: p.string().length(32).primary(),
    eventId: p.bigint('number'),
  },
});
export type AssetLastEvent = InferEntity<typeof AssetLastEvent>;

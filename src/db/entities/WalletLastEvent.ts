import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * Issue 34, PostgreSQL only: the newest event naming a wallet as `from` or `to` (the outbox's
 * `from_wallet` and `to_wallet`, which a wallet filter reads), one row per address that has such
 * events (the table stays empty on SQLite, whose log is one table). Most wallets have a few events,
 * so a wallet's event read rarely fills its page, and on a log partitioned by id
 * (src/db/outbox-partitions.ts) its `from` and `to` branches went on descending into every partition
 * up to the relay's position; they now stop at this id (src/events/reads.ts). Written by the ledger
 * function with the events, in their transaction (src/db/functions/gats_apply_plan.sql: never
 * lowered), as `asset_last_event` is for an NFT (./AssetLastEvent.ts), so a reader that sees an event
 * sees a bound at or past it. No foreign key: an address need not be a registered wallet.
 * Declared here so the schema diff knows the table.
 */
export const WalletLastEvent = defineEntity({
  name: 'WalletLastEvent',
  properties: {
    wallet: p.string().length(42).primary(),
    eventId: p.bigint('number'),
  },
});
export type WalletLastEvent = InferEntity<typeof WalletLastEvent>;

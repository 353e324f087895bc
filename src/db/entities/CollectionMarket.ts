import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * A collection's marketplace settings, set by its studio (issue 35); a collection without a row
 * trades with the defaults: trading on, no royalty, any currency of the ledger.
 */
export const CollectionMarket = defineEntity({
  name: 'CollectionMarket',
  properties: {
    collectionId: p.string().primary(),
    tradingEnabled: p.boolean().default(true),
    /** The studio's royalty on each sale, in basis points (capped by MARKET_MAX_ROYALTY_BPS). */
    royaltyBps: p.integer().default(0),
    /** The currency ids its listings may be priced in; null: any currency. */
    currencies: p.json<string[]>().nullable(),
    /** Where the royalty goes: a wallet of the studio (null: its first wallet). */
    royaltyWallet: p.string().length(42).nullable(),
    updatedAt: p.datetime(),
  },
});
export type CollectionMarket = InferEntity<typeof CollectionMarket>;

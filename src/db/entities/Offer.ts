import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

export const OFFER_STATUSES = ['open', 'accepted', 'cancelled', 'expired'] as const;
export type OfferStatus = (typeof OFFER_STATUSES)[number];

/**
 * An offer (`ofr_` + ULID, issue 35): `bidderWallet` offers `price` base units of `currencyId` for
 * the NFT `assetId`, or for any NFT of `collectionId` when `assetId` is null. The price is reserved in
 * the bidder's holding (`holding.reserved`) while the offer is open; an acceptance pays it from there,
 * a cancellation or expiry releases it, each in one plan guarded by `offerOpen` (which locks the row).
 */
export const Offer = defineEntity({
  name: 'Offer',
  indexes: [
    // The best offer on an item, on a collection, in a currency: read first in price order.
    { properties: ['assetId', 'status', 'currencyId', 'price', 'id'] },
    // A collection's best offer: its collection offers (`assetId` null) only, walked from the highest
    // price. Partial: PostgreSQL walks no index in order past an `IS NULL` column, and an index of
    // every offer would make it walk the item offers too, filtering them out.
    {
      name: 'offer_collection_offer_price_index',
      expression:
        'create index "offer_collection_offer_price_index" on "offer" ("collection_id", "status", "currency_id", "price", "id") where "asset_id" is null',
    },
    { properties: ['bidderWallet', 'id'] },
    { properties: ['collectionId', 'id'] },
    // The expiry sweep: open offers by expiry.
    { properties: ['status', 'expiresAt'] },
  ],
  properties: {
    id: p.string().length(32).primary(),
    status: p.string().length(16).$type<OfferStatus>(),
    bidderUserId: p.string(),
    /** Stored address form, as holding.wallet. */
    bidderWallet: p.string().length(42),
    /** The NFT offered for; null: any NFT of the collection. */
    assetId: p.string().length(32).nullable(),
    collectionId: p.string(),
    currencyId: p.string().length(32),
    /** The whole price, in base units of the currency (reserved while open). */
    price: p.type(Uint256Type),
    expiresAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    /** The sale's `op_` id once accepted. */
    operationId: p.string().length(32).nullable(),
    /** The NFT an acceptance sold (a collection offer's item). */
    soldAssetId: p.string().length(32).nullable(),
    /** The user who accepted or cancelled it (null when it expired). */
    closedBy: p.string().nullable(),
  },
});
export type Offer = InferEntity<typeof Offer>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

export const OFFER_STATUSES = ['open', 'accepted', 'cancelled', 'expired'] as const;
export type OfferStatus = (typeof OFFER_STATUSES)[number];

/**
 * An offer (`ofr_` + ULID, issue 35): `bidderWallet` offers `price` base units of `currencyId` for
 * the NFT `assetId`, or for any NFT of `collectionId` when `assetId` is null (a collection offer), or
 * for any NFT of it whose metadata has the attribute `traitType` = `traitValue` (a trait offer,
 * `assetId` null too). The price is reserved in
 * the bidder's holding (`holding.reserved`) while the offer is open; an acceptance pays it from there,
 * a cancellation or expiry releases it, each in one plan guarded by `offerOpen` (which locks the row).
 */
export const Offer = defineEntity({
  name: 'Offer',
  indexes: [
    // The best offer on an item, on a collection, in a currency: read first in price order.
    { properties: ['assetId', 'status', 'currencyId', 'price', 'id'] },
    // A collection's best offer: its collection offers (`assetId` and `traitType` null) only, walked
    // from the highest price. Partial: PostgreSQL walks no index in order past an `IS NULL` column,
    // and an index of every offer would make it walk the item and trait offers too, filtering them out.
    {
      name: 'offer_collection_offer_price_index',
      expression:
        'create index "offer_collection_offer_price_index" on "offer" ("collection_id", "status", "currency_id", "price", "id") where "asset_id" is null and "trait_type" is null',
    },
    // The best trait offer for one attribute value, walked from the highest price (an item's best
    // offer reads it once per attribute the item has).
    {
      name: 'offer_trait_offer_price_index',
      expression:
        'create index "offer_trait_offer_price_index" on "offer" ("collection_id", "trait_type", "trait_value", "status", "currency_id", "price", "id") where "trait_type" is not null',
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
    /** A trait offer's attribute: its `trait_type` and its value as text (both null otherwise). */
    traitType: p.string().length(100).nullable(),
    traitValue: p.string().length(500).nullable(),
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

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

export const LISTING_STATUSES = ['active', 'sold', 'cancelled', 'ended', 'expired'] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];

/** Why an active listing ended without a sale: its item left the seller, burned or froze. */
export const LISTING_END_REASONS = ['moved', 'burned', 'frozen', 'unavailable', 'tradingOff'] as const;
export type ListingEndReason = (typeof LISTING_END_REASONS)[number];

/**
 * A fixed-price listing (`lst_` + ULID, issue 35): `amount` of `assetId` (1 for an NFT) from
 * `sellerWallet` for `price` base units of the currency `currencyId`. The item stays in the seller's
 * wallet; a purchase is one ledger plan guarded by the listing still being active (`listingActive`,
 * which locks the row: of two buyers exactly one wins).
 */
export const Listing = defineEntity({
  name: 'Listing',
  indexes: [
    // The expiry sweep: active listings by expiry.
    { properties: ['status', 'expiresAt'] },
    // The floor: the cheapest active listing of a collection in a currency, read first in price order
    // (and the collection's listings cheapest first, `sort=price`).
    { properties: ['collectionId', 'status', 'currencyId', 'price', 'id'] },
    // An item's active listings (its floor and its listings cheapest first in one currency; ending
    // them when it moves reads the (asset_id, status) prefix).
    { properties: ['assetId', 'status', 'currencyId', 'price', 'id'] },
    { properties: ['sellerWallet', 'id'] },
    { properties: ['collectionId', 'id'] },
  ],
  properties: {
    id: p.string().length(32).primary(),
    status: p.string().length(16).$type<ListingStatus>(),
    endReason: p.string().length(16).$type<ListingEndReason>().nullable(),
    sellerUserId: p.string(),
    /** Stored address form, as holding.wallet. */
    sellerWallet: p.string().length(42),
    assetId: p.string().length(32),
    collectionId: p.string(),
    /** Base units listed (1 for an NFT). */
    amount: p.type(Uint256Type),
    currencyId: p.string().length(32),
    /** The whole price, in base units of the currency. */
    price: p.type(Uint256Type),
    expiresAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    /** The sale's `op_` id once sold. */
    operationId: p.string().length(32).nullable(),
    /** The user who bought or cancelled it (null when it ended by itself). */
    closedBy: p.string().nullable(),
  },
});
export type Listing = InferEntity<typeof Listing>;

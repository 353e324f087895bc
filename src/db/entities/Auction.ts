import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

export const AUCTION_STATUSES = ['open', 'sold', 'unsold', 'cancelled'] as const;
export type AuctionStatus = (typeof AUCTION_STATUSES)[number];

/**
 * An English auction (`auc_` + ULID, issue 35): the NFT `assetId` is escrowed in the seller's holding
 * (`holding.reserved`) while `open`; each bid reserves its amount in the bidder's holding and releases
 * the previous best bid's in the same plan; at `endsAt` the market keeper settles it (`sold` to the
 * best bidder, or `unsold`: the item released), in one plan guarded on the row still open. Before any
 * bid its seller may cancel it (`cancelled`: the item released).
 */
export const Auction = defineEntity({
  name: 'Auction',
  indexes: [
    // The settler: open auctions by end.
    { properties: ['status', 'endsAt'] },
    { properties: ['assetId', 'id'] },
    { properties: ['sellerWallet', 'id'] },
    { properties: ['collectionId', 'id'] },
  ],
  properties: {
    id: p.string().length(32).primary(),
    status: p.string().length(16).$type<AuctionStatus>(),
    sellerUserId: p.string(),
    sellerWallet: p.string().length(42),
    assetId: p.string().length(32),
    collectionId: p.string(),
    currencyId: p.string().length(32),
    /** Base units of the currency: the lowest bid accepted. */
    reservePrice: p.type(Uint256Type),
    /** Base units: a bid beats the best by at least this much. */
    minIncrement: p.type(Uint256Type),
    endsAt: p.datetime(),
    /** A bid landing less than this many seconds before `endsAt` pushes `endsAt` to now plus it. */
    extensionSeconds: p.integer(),
    bestBid: p.type(Uint256Type).nullable(),
    bestBidder: p.string().length(42).nullable(),
    bestBidderUserId: p.string().nullable(),
    bids: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    /** The settlement's `op_` id (a sale's, or the release's). */
    operationId: p.string().length(32).nullable(),
  },
});
export type Auction = InferEntity<typeof Auction>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const TRADE_STATUSES = ['open', 'accepted', 'cancelled'] as const;
export type TradeStatus = (typeof TRADE_STATUSES)[number];

/** One side of a trade: `amount` is a decimal string of base units (1 for an NFT). */
export interface TradeItem {
  assetId: string;
  amount: string;
}

/**
 * A two-party trade (`trd_` + ULID): the proposer offers `offer` from `proposerWallet` for `request`
 * from `counterpartyWallet`; open until accepted, cancelled or `expiresAt`. Accepting applies both
 * sides as one ledger plan (the operation `operationId`).
 */
export const Trade = defineEntity({
  name: 'Trade',
  properties: {
    id: p.string().length(32).primary(),
    status: p.string().length(16).$type<TradeStatus>(),
    proposerUserId: p.string(),
    /** Stored address form, as holding.wallet. */
    proposerWallet: p.string().length(42).index(),
    counterpartyWallet: p.string().length(42).index(),
    offer: p.json<TradeItem[]>(),
    request: p.json<TradeItem[]>(),
    expiresAt: p.datetime(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    /** The `op_` id of the operation that settled it (accepted). */
    operationId: p.string().length(32).nullable(),
    /** The user who accepted or cancelled it. */
    closedBy: p.string().nullable(),
  },
});
export type Trade = InferEntity<typeof Trade>;

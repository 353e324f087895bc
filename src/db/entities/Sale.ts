import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

/**
 * A settled purchase of a listing (issue 35): its id is the operation's `op_` id. Amounts are base
 * units of the currency: `price` = `sellerProceeds` + `royalty` + `fee`, exactly.
 */
export const Sale = defineEntity({
  name: 'Sale',
  indexes: [
    { properties: ['assetId', 'id'] },
    { properties: ['collectionId', 'id'] },
    // The last sale and the 24 h volume: one collection's (one item's) sales in one currency by time.
    { properties: ['collectionId', 'currencyId', 'createdAt', 'id'] },
    { properties: ['assetId', 'currencyId', 'createdAt', 'id'] },
  ],
  properties: {
    id: p.string().length(32).primary(),
    listingId: p.string().length(32).unique(),
    assetId: p.string().length(32),
    collectionId: p.string(),
    amount: p.type(Uint256Type),
    currencyId: p.string().length(32),
    price: p.type(Uint256Type),
    royalty: p.type(Uint256Type),
    fee: p.type(Uint256Type),
    sellerProceeds: p.type(Uint256Type),
    sellerWallet: p.string().length(42),
    buyerWallet: p.string().length(42),
    createdAt: p.datetime(),
  },
});
export type Sale = InferEntity<typeof Sale>;

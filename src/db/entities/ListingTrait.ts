import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

/**
 * Issue 35, the trait floor: one row per attribute value of an ACTIVE listing's item (its `trait_type`
 * and its value as text, as trait offers name them), with the listing's collection, currency, price
 * and expiry copied. Written by the ledger store in the plan that creates the listing, deleted in the
 * plan that closes it (sold, cancelled, ended, expired), and rewritten in the plan that changes the
 * item's metadata: the rows follow the item's current attributes (docs/architecture/marketplace.md).
 */
export const ListingTrait = defineEntity({
  name: 'ListingTrait',
  indexes: [
    // The trait floor: the cheapest active listing with one attribute value, in price order.
    {
      name: 'listing_trait_floor_index',
      properties: ['collectionId', 'traitType', 'traitValue', 'currencyId', 'price', 'listingId'],
    },
  ],
  properties: {
    listingId: p.string().length(32).primary(),
    traitType: p.string().length(100).primary(),
    traitValue: p.string().length(500).primary(),
    collectionId: p.string(),
    currencyId: p.string().length(32),
    price: p.type(Uint256Type),
    expiresAt: p.datetime().nullable(),
  },
});
export type ListingTrait = InferEntity<typeof ListingTrait>;

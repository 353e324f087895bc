import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';

export const STORE_OFFER_STATUSES = ['active', 'closed'] as const;
export type StoreOfferStatus = (typeof STORE_OFFER_STATUSES)[number];

/**
 * An offer of a collection's store (issue 36, src/domain/ledger/store-offers.ts): configuration, like a
 * recipe, except for `sold`, which only a purchase's plan changes (the `offerSales` part, in the
 * transaction that checks the limits with the `offerAvailable` guard, which locks this row). Every
 * change of the terms, limits, window or status makes a new `version`; a purchase names the version
 * it accepted. `price` and `grants` are the contract's lists, amounts as decimal strings (a
 * currency's decimals never change).
 */
export const StoreOffer = defineEntity({
  name: 'StoreOffer',
  indexes: [{ properties: ['collectionId', 'id'] }],
  properties: {
    /** `sof_` + a ULID: offers list in creation order by id. */
    id: p.string().length(32).primary(),
    collectionId: p.string(),
    name: p.string(),
    version: p.integer(),
    status: p.string().length(16).$type<StoreOfferStatus>(),
    price: p.json<components['schemas']['StorePrice'][]>(),
    grants: p.json<components['schemas']['StoreGrant'][]>(),
    /** Stored address form, as holding.wallet. */
    payTo: p.string().length(42),
    limitPerWallet: p.integer().nullable(),
    limitTotal: p.integer().nullable(),
    /** Units sold, all versions together. */
    sold: p.integer().default(0),
    startsAt: p.datetime().nullable(),
    endsAt: p.datetime().nullable(),
    createdBy: p.string(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    /**
     * A claim code (issue 36): an offer with no price reached only by its code, whose hex SHA-256
     * is kept here (never the code); null for a store offer. `codePrefix`: its first characters, to
     * tell codes apart.
     */
    codeHash: p.string().length(64).nullable().unique(),
    codePrefix: p.string().length(16).nullable(),
  },
});
export type StoreOffer = InferEntity<typeof StoreOffer>;

/** The units of an offer one wallet bought (what `perWalletLimit` counts); written by purchases only. */
export const StoreOfferWallet = defineEntity({
  name: 'StoreOfferWallet',
  properties: {
    offerId: p.string().length(32).primary(),
    wallet: p.string().length(42).primary(),
    bought: p.integer(),
  },
});
export type StoreOfferWallet = InferEntity<typeof StoreOfferWallet>;

/**
 * A settled store purchase: its id is the operation's `op_` id; `paid` and `granted` are the
 * contract's StoreAmount lists as answered (decimal strings).
 */
export const StorePurchase = defineEntity({
  name: 'StorePurchase',
  indexes: [{ properties: ['offerId', 'id'] }, { properties: ['wallet', 'id'] }],
  properties: {
    id: p.string().length(32).primary(),
    offerId: p.string().length(32),
    version: p.integer(),
    collectionId: p.string(),
    wallet: p.string().length(42),
    userId: p.string(),
    quantity: p.integer(),
    paid: p.json<components['schemas']['StoreAmount'][]>(),
    payTo: p.string().length(42),
    granted: p.json<components['schemas']['StoreAmount'][]>(),
    createdAt: p.datetime(),
  },
});
export type StorePurchase = InferEntity<typeof StorePurchase>;

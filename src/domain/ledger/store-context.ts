// What the store's parts share (issue 36): a store offer (or claim code) read and published, its
// collection, what a wallet bought of it, its grants and window checked, and the refusals of an offer
// that cannot be bought. The offers (./store-offers.ts), the purchase (./store-purchase.ts) and the
// claim codes (./store-claim-codes.ts) take it from the store service (./stores.ts).

import type { components } from '../../../generated/openapi/types.ts';
import type { Database } from '../../db/database.ts';
import { type StoreOffer, type StoreOfferStatus, StoreOfferWallet } from '../../db/entities/StoreOffer.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { mintedCurrencyAmount } from './collections.ts';
import type { Idempotency } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';

type Schemas = components['schemas'];
export type StoreOfferView = Schemas['StoreOffer'];
export type StoreGrantView = Schemas['StoreGrant'];
export type ClaimCodeView = Schemas['ClaimCode'];

export class OfferNotAvailableError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/offer-not-available');
  }
}

export class OfferVersionChangedError extends ConflictError {
  constructor(id: string, asked: number, current: number) {
    super(
      `The offer ${id} is at version ${current}, not ${asked}: its terms changed. Read it again and buy its current version if it suits.`,
      '/problems/offer-version-changed',
    );
  }
}

export class OfferLimitReachedError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/offer-limit-reached');
  }
}

export const offerNotFound = (id: string) => new NotFoundError(`No store offer with id ${id}.`);

export function offerView(offer: StoreOffer, walletBought?: number): StoreOfferView {
  return {
    id: offer.id,
    collection: offer.collectionId,
    name: offer.name,
    version: offer.version,
    status: offer.status,
    price: offer.price,
    grants: offer.grants,
    payTo: formatAddress(offer.payTo),
    perWalletLimit: offer.limitPerWallet ?? null,
    totalLimit: offer.limitTotal ?? null,
    sold: offer.sold,
    ...(walletBought !== undefined && { walletBought }),
    startsAt: offer.startsAt?.toISOString() ?? null,
    endsAt: offer.endsAt?.toISOString() ?? null,
    createdBy: offer.createdBy,
    createdAt: offer.createdAt.toISOString(),
    updatedAt: offer.updatedAt.toISOString(),
  };
}

export function claimCodeView(offer: StoreOffer): ClaimCodeView {
  return {
    id: offer.id,
    collection: offer.collectionId,
    prefix: offer.codePrefix ?? '',
    grants: offer.grants,
    maxRedemptions: offer.limitTotal ?? 1,
    perWalletLimit: offer.limitPerWallet ?? 1,
    redeemed: offer.sold,
    startsAt: offer.startsAt?.toISOString() ?? null,
    expiresAt: offer.endsAt?.toISOString() ?? null,
    status: offer.status,
    version: offer.version,
    createdBy: offer.createdBy,
    createdAt: offer.createdAt.toISOString(),
  };
}

/** The audit trail's object of a store offer or claim code: in its collection, its studio's. */
export function offerObject(id: string, collection: { id: string; ownerId: string }, type = 'storeOffer') {
  return { type, id, ownerId: collection.ownerId, collectionId: collection.id };
}

export function checkWindow(startsAt: Date | null, endsAt: Date | null): void {
  if (startsAt && endsAt && endsAt.getTime() <= startsAt.getTime())
    throw new ValidationError('`endsAt` must be after `startsAt`.', [
      { pointer: '/body/endsAt', detail: 'must be after startsAt' },
    ]);
}

export const dateOf = (text: string | null | undefined) => (text ? new Date(text) : null);

/** The purchase path's reads, prepared (each was an ORM read: a large part of a purchase's CPU). */
const COLLECTION_OWNER = 'select owner_id from collection where id = ?';
const OFFER =
  'select id, collection_id, name, version, status, price, grants, pay_to, limit_per_wallet, limit_total, sold, ' +
  'starts_at, ends_at, created_by, created_at, updated_at, code_hash, code_prefix from store_offer where id = ?';

/**
 * A row of OFFER as both databases return it: counts as numbers (or numeric text), dates and JSON as
 * their driver gives them (read through the statements' `date` and `json`).
 */
export interface StoreOfferRow {
  id: string;
  collection_id: string;
  name: string;
  version: number | string;
  status: StoreOfferStatus;
  price: unknown;
  grants: unknown;
  pay_to: string;
  limit_per_wallet: number | string | null;
  limit_total: number | string | null;
  sold: number | string;
  starts_at: unknown;
  ends_at: unknown;
  created_by: string;
  created_at: unknown;
  updated_at: unknown;
  code_hash: string | null;
  code_prefix: string | null;
}

export type StoreContext = ReturnType<typeof createStoreContext>;

export function createStoreContext({ orm, reads }: Database, idempotency: Idempotency, writer: LegWriter) {
  async function collectionOf(id: string) {
    const [row] = await reads.all<{ owner_id: string }>(COLLECTION_OWNER, [id]);
    if (!row) throw new NotFoundError(`No collection with id ${id}.`);
    return { id, ownerId: row.owner_id };
  }

  async function readOffer(id: string): Promise<StoreOffer> {
    const [row] = await reads.all<StoreOfferRow>(OFFER, [id]);
    if (!row) throw offerNotFound(id);
    const number = (value: number | string | null) => (value == null ? null : Number(value));
    const offer = {
      id: row.id,
      collectionId: row.collection_id,
      name: row.name,
      version: Number(row.version),
      status: row.status,
      price: reads.json(row.price) as StoreOffer['price'],
      grants: reads.json(row.grants) as StoreOffer['grants'],
      payTo: row.pay_to,
      limitPerWallet: number(row.limit_per_wallet),
      limitTotal: number(row.limit_total),
      sold: Number(row.sold),
      startsAt: row.starts_at == null ? null : reads.date(row.starts_at),
      endsAt: row.ends_at == null ? null : reads.date(row.ends_at),
      createdBy: row.created_by,
      createdAt: reads.date(row.created_at),
      updatedAt: reads.date(row.updated_at),
      codeHash: row.code_hash ?? null,
      codePrefix: row.code_prefix ?? null,
    };
    return offer as StoreOffer;
  }

  async function boughtBy(offerId: string, wallet: StoredAddress): Promise<number> {
    const row = await orm.em.fork().findOne(StoreOfferWallet, { offerId, wallet });
    return row?.bought ?? 0;
  }

  /** The grants, normalized: the collection's currencies the actor may mint, or NFT templates. */
  async function checkGrants(
    actor: Actor,
    collectionId: string,
    grants: StoreGrantView[],
  ): Promise<StoreGrantView[]> {
    const em = orm.em.fork();
    const out: StoreGrantView[] = [];
    for (const [i, item] of grants.entries()) {
      const label = `Grant ${i}`;
      if ('nft' in item) {
        out.push({ nft: item.nft });
        continue;
      }
      const amount = await mintedCurrencyAmount(em, actor, collectionId, item, label, `/body/grants/${i}`);
      // Issue 36: a timed currency grant keeps its duration.
      out.push({
        assetId: item.assetId,
        amount,
        ...(item.expiresInSeconds !== undefined && { expiresInSeconds: item.expiresInSeconds }),
      });
    }
    return out;
  }

  return { orm, idempotency, writer, reads, collectionOf, readOffer, boughtBy, checkGrants };
}

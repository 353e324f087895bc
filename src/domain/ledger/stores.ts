// Stores (issue 36): a collection's studio publishes offers (a price in currencies, paid to a wallet
// of the studio, and in items by template, burned from the buyer's wallet: ./store-items.ts; for
// grants minted to the buyer: currency amounts and NFT templates, a bundle when there are several),
// with optional limits (units per wallet, units in all) and a window. An offer is configuration (a
// row, like a recipe); every change makes a new version, and a purchase names the version it
// accepted.
//
// A purchase is ONE ledger plan through the one ledger store:
//   guards: the offer still available at the version (`offerAvailable`: active, inside its window,
//           the units sold and the wallet's units within their limits after this purchase; it locks
//           the offer row, so of two buyers racing for the last unit exactly one wins), the buyer
//           controls its wallet and holds the price, each paid item still its and burnable (the
//           leg writer's guards), each granted currency's supply within its max;
//   rows:   the payments from the buyer to `payTo` and the burns of the paid items (legs), the
//           grants minted to the buyer (as mints are: ./assets.ts), the units counted
//           (`offerSales`), the purchase row, the events (`newTransfer`s, `newNFT`s,
//           `storePurchase`), all under one `op_` id and one idempotency record.
// The grants are minted with the powers the offer's creator has at the purchase (a demoted studio
// sells nothing more: src/domain/authorization.ts, `assertCreatorMayGrant`).

import { createHash, randomBytes } from 'node:crypto';
import type { FilterQuery } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';
import type { Database } from '../../db/database.ts';
import { StoreOffer, type StoreOfferStatus, StoreOfferWallet } from '../../db/entities/StoreOffer.ts';
import { inTransaction } from '../../db/transactions.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { auditDraft, flushAudited, recordAudit } from '../audit.ts';
import { assertCollectionPowers, assertCreatorMayGrant, controlsWallet } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, labelledAmount, parseAmount } from './amounts.ts';
import { amountOf } from './asset-rows.ts';
import { isChainAssetId } from './chain-assets.ts';
import { mintedCurrencyAmount } from './collections.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import type { AssetFacts, Leg } from './legs.ts';
import { currencyMintParts, MaxSupplyExceededError, nftMintParts, timedLot } from './mints.ts';
import { actingNow } from './recipes.ts';
import type {
  BalanceChange,
  Guard,
  GuardFailure,
  NewAsset,
  NewEvent,
  NewLot,
  NewStorePurchase,
  NewTransfer,
} from './store/plan.ts';
import { type ItemPrice, itemLegs, MAX_ITEMS_PER_UNIT } from './store-items.ts';
import type { AssetView, TransferView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { earlierAnswerOr } from './writes.ts';

type Schemas = components['schemas'];
export type StoreOfferView = Schemas['StoreOffer'];
export type StorePriceView = Schemas['StorePrice'];
export type StoreGrantView = Schemas['StoreGrant'];
export type StorePurchaseView = Schemas['StorePurchase'];
export type StorePurchaseResultView = Schemas['StorePurchaseResult'];

export interface StoreOfferTerms {
  name: string;
  price: StorePriceView[];
  grants: StoreGrantView[];
  payTo: StoredAddress;
  perWalletLimit?: number | null;
  totalLimit?: number | null;
  startsAt?: string | null;
  endsAt?: string | null;
}

export type StoreOfferChange = Partial<StoreOfferTerms> & { status?: StoreOfferStatus };

export interface PurchaseInput {
  wallet: StoredAddress;
  version: number;
  quantity?: number;
  /** The NFTs paying the offer's item prices, as the buyer named them. */
  items?: string[];
}

export type ClaimCodeView = Schemas['ClaimCode'];
export type CreatedClaimCodesView = Schemas['CreatedClaimCodes'];

export interface CreateClaimCodesInput {
  grants: StoreGrantView[];
  count?: number;
  code?: string;
  maxRedemptions?: number;
  perWalletLimit?: number;
  startsAt?: string | null;
  expiresAt?: string | null;
}

export interface StoreService {
  create(actor: Actor, collectionId: string, input: StoreOfferTerms): Promise<StoreOfferView>;
  list(
    collectionId: string,
    options: { status?: StoreOfferStatus; limit: number; cursor?: string },
  ): Promise<Page<StoreOfferView>>;
  get(id: string, wallet?: StoredAddress): Promise<StoreOfferView>;
  update(actor: Actor, id: string, change: StoreOfferChange): Promise<StoreOfferView>;
  /** Pays the version's price and mints its grants, `quantity` times, as one plan; one `op_` id. */
  purchase(
    actor: Actor,
    id: string,
    input: PurchaseInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<StorePurchaseResultView>>;
  /** Claim codes: offers with no price reached by their code (stored hashed). */
  createClaimCodes(
    actor: Actor,
    collectionId: string,
    input: CreateClaimCodesInput,
  ): Promise<CreatedClaimCodesView>;
  getClaimCode(actor: Actor, id: string): Promise<ClaimCodeView>;
  /** Redeems a code as one plan; ClaimCodeInvalidError when no code is `code` (a guess to count). */
  redeem(
    actor: Actor,
    input: { wallet: StoredAddress; code: string },
    idempotencyKey?: string,
  ): Promise<WriteResult<StorePurchaseResultView>>;
}

export class ClaimCodeInvalidError extends NotFoundError {
  constructor() {
    super('No claim code is this code.', '/problems/claim-code-invalid');
  }
}

/** A code as compared and hashed: trimmed, upper case. */
const normalizedCode = (code: string) => code.trim().toUpperCase();
const codeHashOf = (code: string) => createHash('sha256').update(normalizedCode(code), 'utf8').digest('hex');
const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** 20 characters of Crockford base32 (100 bits), in groups of 5. */
function randomCode(): string {
  const bytes = randomBytes(20);
  const chars = [...bytes].map((b) => CODE_ALPHABET[b % 32]).join('');
  return chars.match(/.{5}/g)?.join('-') ?? chars;
}

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

const offerNotFound = (id: string) => new NotFoundError(`No store offer with id ${id}.`);

function offerView(offer: StoreOffer, walletBought?: number): StoreOfferView {
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

function claimCodeView(offer: StoreOffer): ClaimCodeView {
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
function offerObject(id: string, collection: { id: string; ownerId: string }, type = 'storeOffer') {
  return { type, id, ownerId: collection.ownerId, collectionId: collection.id };
}

/** Why an offer cannot be bought at `at` by its status and window (undefined: it can). */
function unavailability(offer: StoreOffer, at: Date): 'closed' | 'notStarted' | 'expired' | undefined {
  if (offer.status !== 'active') return 'closed';
  if (offer.startsAt && offer.startsAt.getTime() > at.getTime()) return 'notStarted';
  if (offer.endsAt && offer.endsAt.getTime() <= at.getTime()) return 'expired';
  return undefined;
}

function notAvailable(offer: StoreOffer, reason: 'closed' | 'notStarted' | 'expired') {
  return new OfferNotAvailableError(
    reason === 'closed'
      ? `The offer ${offer.id} was closed by its studio.`
      : reason === 'notStarted'
        ? `The offer ${offer.id} is on sale from ${offer.startsAt?.toISOString()}.`
        : `The offer ${offer.id} ended at ${offer.endsAt?.toISOString()}.`,
  );
}

/** The purchase path's reads, prepared (each was an ORM read: a large part of a purchase's CPU). */
const COLLECTION_OWNER = 'select owner_id from collection where id = ?';
const OFFER =
  'select id, collection_id, name, version, status, price, grants, pay_to, limit_per_wallet, limit_total, sold, ' +
  'starts_at, ends_at, created_by, created_at, updated_at, code_hash, code_prefix from store_offer where id = ?';
const MAX_SUPPLY = 'select max_supply from asset where id = ?';
const BURN_POLICY = 'select burn_policy from collection where id = ?';
const OFFER_OF_CODE = 'select id, version from store_offer where code_hash = ?';

export function createStoreService(
  { orm, reads }: Database,
  idempotency: Idempotency,
  writer: LegWriter,
): StoreService {
  async function collectionOf(id: string) {
    const [row] = await reads.all(COLLECTION_OWNER, [id]);
    if (!row) throw new NotFoundError(`No collection with id ${id}.`);
    return { id, ownerId: String(row.owner_id) };
  }

  async function readOffer(id: string): Promise<StoreOffer> {
    const [row] = await reads.all(OFFER, [id]);
    if (!row) throw offerNotFound(id);
    const number = (value: unknown) => (value == null ? null : Number(value));
    const offer = {
      id: String(row.id),
      collectionId: String(row.collection_id),
      name: String(row.name),
      version: Number(row.version),
      status: row.status as StoreOfferStatus,
      price: reads.json(row.price) as StoreOffer['price'],
      grants: reads.json(row.grants) as StoreOffer['grants'],
      payTo: String(row.pay_to),
      limitPerWallet: number(row.limit_per_wallet),
      limitTotal: number(row.limit_total),
      sold: Number(row.sold),
      startsAt: row.starts_at == null ? null : reads.date(row.starts_at),
      endsAt: row.ends_at == null ? null : reads.date(row.ends_at),
      createdBy: String(row.created_by),
      createdAt: reads.date(row.created_at),
      updatedAt: reads.date(row.updated_at),
      codeHash: (row.code_hash ?? null) as string | null,
      codePrefix: (row.code_prefix ?? null) as string | null,
    };
    return offer as StoreOffer;
  }

  async function boughtBy(offerId: string, wallet: StoredAddress): Promise<number> {
    const row = await orm.em.fork().findOne(StoreOfferWallet, { offerId, wallet });
    return row?.bought ?? 0;
  }

  /** A price's currency: a ledger currency of any collection (404 when absent, 400 otherwise). */
  async function priceCurrency(assetId: string, label: string, pointer: string): Promise<AssetFacts> {
    if (isChainAssetId(assetId))
      throw new ValidationError(
        `${label}: ${assetId} is an on-chain token; a price is paid in ledger currencies.`,
        [{ pointer, detail: 'must be a ledger currency' }],
      );
    let facts: AssetFacts;
    try {
      facts = await writer.factsOf(assetId);
    } catch (error) {
      if (error instanceof NotFoundError) throw new NotFoundError(`${label}: no asset with id ${assetId}.`);
      throw error;
    }
    if (facts.kind !== 'fungible')
      throw new ValidationError(`${label}: ${assetId} is not a currency; a price is paid in currencies.`, [
        { pointer, detail: 'must be a currency' },
      ]);
    return facts;
  }

  /**
   * The price, normalized (amounts as the currency formats them); one entry per currency and per
   * item template, the items of a unit at most MAX_ITEMS_PER_UNIT, burnable in the collection.
   */
  async function checkPrice(collectionId: string, price: StorePriceView[]): Promise<StorePriceView[]> {
    const seen = new Set<string>();
    const out: StorePriceView[] = [];
    let items = 0;
    for (const [i, item] of price.entries()) {
      const label = `Price ${i}`;
      if ('nft' in item) {
        const pointer = `/body/price/${i}/nft`;
        if (seen.has(`nft ${item.nft.name}`))
          throw new ValidationError(`${label}: ${item.nft.name} appears twice; give each template once.`, [
            { pointer: `${pointer}/name`, detail: 'appears twice' },
          ]);
        seen.add(`nft ${item.nft.name}`);
        items += item.nft.quantity;
        if (items > MAX_ITEMS_PER_UNIT)
          throw new ValidationError(
            `${label}: a unit would cost ${items} items, more than ${MAX_ITEMS_PER_UNIT}.`,
            [{ pointer: `${pointer}/quantity`, detail: `at most ${MAX_ITEMS_PER_UNIT} items a unit in all` }],
          );
        const [row] = await reads.all(BURN_POLICY, [collectionId]);
        if (row?.burn_policy === 'none')
          throw new ValidationError(
            `${label}: the collection ${collectionId} allows no burns (burnPolicy none), and paid items are burned.`,
            [{ pointer, detail: 'the collection allows no burns' }],
          );
        out.push({ nft: { name: item.nft.name, quantity: item.nft.quantity } });
        continue;
      }
      if (seen.has(item.assetId))
        throw new ValidationError(`${label}: ${item.assetId} appears twice; give each currency once.`, [
          { pointer: `/body/price/${i}/assetId`, detail: 'appears twice' },
        ]);
      seen.add(item.assetId);
      const currency = await priceCurrency(item.assetId, label, `/body/price/${i}/assetId`);
      const amount = labelledAmount(item.amount, currency.decimals, label, `/body/price/${i}/amount`);
      out.push({ assetId: item.assetId, amount: formatAmount(amount, currency.decimals) });
    }
    return out;
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

  function checkWindow(startsAt: Date | null, endsAt: Date | null): void {
    if (startsAt && endsAt && endsAt.getTime() <= startsAt.getTime())
      throw new ValidationError('`endsAt` must be after `startsAt`.', [
        { pointer: '/body/endsAt', detail: 'must be after startsAt' },
      ]);
  }

  const dateOf = (text: string | null | undefined) => (text ? new Date(text) : null);

  /** Why the plan's `offerAvailable` guard failed, as the problem the buyer gets. */
  async function offerRefusal(id: string, asked: PurchaseInput, failure: GuardFailure, viaCode = false) {
    if (failure.guard.kind !== 'offerAvailable') return undefined;
    if (failure.reason === 'missing') return offerNotFound(id);
    const offer = await readOffer(id);
    const quantity = asked.quantity ?? 1;
    switch (failure.reason) {
      case 'version':
        // A code changed meanwhile (its studio disabled it): its redeemer named no version.
        if (viaCode) return notAvailable(offer, offer.status === 'active' ? 'expired' : 'closed');
        return new OfferVersionChangedError(id, asked.version, offer.version);
      case 'soldOut':
        return new OfferLimitReachedError(
          offer.sold >= (offer.limitTotal ?? 0)
            ? `The offer ${id} is sold out: ${offer.sold} of ${offer.limitTotal} units sold.`
            : `The offer ${id} has ${(offer.limitTotal ?? 0) - offer.sold} units left, fewer than ${quantity}.`,
        );
      case 'walletLimit': {
        const bought = await boughtBy(id, asked.wallet);
        return new OfferLimitReachedError(
          `The wallet ${formatAddress(asked.wallet)} bought ${bought} of the ${offer.limitPerWallet} units of the offer ${id} one wallet may buy; ${quantity} more would pass it.`,
        );
      }
      case 'closed':
      case 'notStarted':
      case 'expired':
        return notAvailable(offer, failure.reason);
      default:
        return new Error(`Unexpected offerAvailable reason ${failure.reason}.`);
    }
  }

  const service: StoreService = {
    async create(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'sell in its store');
      const price = await checkPrice(collectionId, input.price);
      const grants = await checkGrants(actor, collectionId, input.grants);
      await writer.assertControls(actor, [
        { from: input.payTo, place: { pointer: '/body/payTo', label: '' } },
      ]);
      const startsAt = dateOf(input.startsAt);
      const endsAt = dateOf(input.endsAt);
      checkWindow(startsAt, endsAt);
      const em = orm.em.fork();
      const at = new Date();
      const offer = em.create(StoreOffer, {
        id: newId('sof'),
        collectionId,
        name: input.name,
        version: 1,
        status: 'active',
        price,
        grants,
        payTo: input.payTo,
        limitPerWallet: input.perWalletLimit ?? null,
        limitTotal: input.totalLimit ?? null,
        sold: 0,
        startsAt,
        endsAt,
        createdBy: actor.userId,
        createdAt: at,
        updatedAt: at,
      });
      await flushAudited(em, () =>
        auditDraft('storeOffer.created', offerObject(offer.id, collection), { after: offerView(offer) }, at),
      );
      return offerView(offer);
    },

    async list(collectionId, { status, limit, cursor }) {
      await collectionOf(collectionId);
      const where: FilterQuery<StoreOffer>[] = [{ collectionId, codeHash: null }];
      if (status) where.push({ status });
      const rows = await pageById(orm.em.fork(), StoreOffer, where, {
        list: 'store-offers',
        order: 'oldest',
        limit,
        cursor,
      });
      return mapPage(rows, (row) => offerView(row));
    },

    async get(id, wallet) {
      const offer = await readOffer(id);
      if (offer.codeHash) throw offerNotFound(id);
      return offerView(offer, wallet === undefined ? undefined : await boughtBy(id, wallet));
    },

    async update(actor, id, change) {
      const offer = await readOffer(id);
      const collection = await collectionOf(offer.collectionId);
      assertCollectionPowers(actor, collection, 'change its store offers');
      if (offer.codeHash && (change.price !== undefined || change.payTo !== undefined))
        throw new ValidationError('A claim code has no price and pays no one.', [
          {
            pointer: change.price !== undefined ? '/body/price' : '/body/payTo',
            detail: 'not for a claim code',
          },
        ]);
      const next: Partial<StoreOffer> = {};
      if (change.name !== undefined) next.name = change.name;
      if (change.status !== undefined) next.status = change.status;
      if (change.price !== undefined) next.price = await checkPrice(offer.collectionId, change.price);
      if (change.grants !== undefined)
        next.grants = await checkGrants(actor, offer.collectionId, change.grants);
      if (change.payTo !== undefined) {
        await writer.assertControls(actor, [
          { from: change.payTo, place: { pointer: '/body/payTo', label: '' } },
        ]);
        next.payTo = change.payTo;
      }
      if (change.perWalletLimit !== undefined) next.limitPerWallet = change.perWalletLimit;
      if (change.totalLimit !== undefined) next.limitTotal = change.totalLimit;
      if (change.startsAt !== undefined) next.startsAt = dateOf(change.startsAt);
      if (change.endsAt !== undefined) next.endsAt = dateOf(change.endsAt);
      checkWindow(
        next.startsAt === undefined ? (offer.startsAt ?? null) : next.startsAt,
        next.endsAt === undefined ? (offer.endsAt ?? null) : next.endsAt,
      );
      // The version as read: a concurrent change of the same offer makes this one a no-op, refused.
      const viewOf = (row: StoreOffer) => (row.codeHash ? claimCodeView(row) : offerView(row));
      const updated = await inTransaction(orm, async (em) => {
        const count = await em.nativeUpdate(
          StoreOffer,
          { id, version: offer.version },
          { ...next, version: offer.version + 1, updatedAt: new Date() },
        );
        if (count === 1) {
          const after = await em.findOneOrFail(StoreOffer, { id });
          await recordAudit(
            em,
            auditDraft(
              offer.codeHash ? 'claimCode.updated' : 'storeOffer.updated',
              offerObject(id, collection, offer.codeHash ? 'claimCode' : 'storeOffer'),
              {
                before: viewOf(offer),
                after: viewOf(after),
              },
            ),
          );
        }
        return count;
      });
      if (updated !== 1)
        throw new ConflictError(
          `The offer ${id} changed while this change was made; read it again.`,
          '/problems/offer-version-changed',
        );
      return offerView(await readOffer(id));
    },

    async purchase(actor, id, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'purchaseStoreOffer',
        key: idempotencyKey,
        request: {
          id,
          wallet: input.wallet,
          version: input.version,
          quantity: input.quantity ?? 1,
          // Only when named: a purchase without items hashes as it did before item prices existed.
          ...(input.items?.length && { items: input.items }),
        },
      });
      return settle(actor, id, input, key, false);
    },

    async createClaimCodes(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'hand out its claim codes');
      const count = input.count ?? 1;
      if (input.code !== undefined && count !== 1)
        throw new ValidationError('A chosen `code` is one code: `count` must be 1.', [
          { pointer: '/body/count', detail: 'must be 1 with a chosen code' },
        ]);
      const grants = await checkGrants(actor, collectionId, input.grants);
      const startsAt = dateOf(input.startsAt);
      const endsAt = dateOf(input.expiresAt);
      checkWindow(startsAt, endsAt);
      const taken = () =>
        new ConflictError('This code is already a claim code.', '/problems/claim-code-exists');
      const em = orm.em.fork();
      if (input.code !== undefined && (await em.count(StoreOffer, { codeHash: codeHashOf(input.code) })))
        throw taken();
      const at = new Date();
      const made: { code: string; offer: StoreOffer }[] = [];
      for (let i = 0; i < count; i++) {
        const code = input.code === undefined ? randomCode() : normalizedCode(input.code);
        const offer = em.create(StoreOffer, {
          id: newId('sof'),
          collectionId,
          name: `Claim code ${code.slice(0, 4)}`,
          version: 1,
          status: 'active',
          price: [],
          grants,
          // Nothing is paid: the zero address stands for no one.
          payTo: ZERO_ADDRESS,
          limitPerWallet: input.perWalletLimit ?? 1,
          limitTotal: input.maxRedemptions ?? 1,
          sold: 0,
          startsAt,
          endsAt,
          createdBy: actor.userId,
          createdAt: at,
          updatedAt: at,
          codeHash: codeHashOf(code),
          codePrefix: code.slice(0, 4),
        });
        made.push({ code, offer });
      }
      try {
        // Audited without the codes (nor their prefixes): each code's id, grants, limits and window.
        await flushAudited(em, () =>
          made.map(({ offer }) => {
            const { prefix: _prefix, ...view } = claimCodeView(offer);
            return auditDraft(
              'claimCode.created',
              offerObject(offer.id, collection, 'claimCode'),
              { after: view },
              at,
            );
          }),
        );
      } catch (error) {
        if (input.code !== undefined) throw taken();
        throw error;
      }
      return { codes: made.map(({ code, offer }) => ({ code, claimCode: claimCodeView(offer) })) };
    },

    async getClaimCode(actor, id) {
      const offer = await orm.em.fork().findOne(StoreOffer, { id, codeHash: { $ne: null } });
      if (!offer) throw new NotFoundError(`No claim code with id ${id}.`);
      assertCollectionPowers(actor, await collectionOf(offer.collectionId), 'see its claim codes');
      return claimCodeView(offer);
    },

    async redeem(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'redeemClaimCode',
        key: idempotencyKey,
        request: { wallet: input.wallet, code: normalizedCode(input.code) },
      });
      const [offer] = await reads.all(OFFER_OF_CODE, [codeHashOf(input.code)]);
      if (!offer) return earlierAnswerOr(idempotency, key, new ClaimCodeInvalidError());
      return settle(
        actor,
        String(offer.id),
        { wallet: input.wallet, version: Number(offer.version), quantity: 1 },
        key,
        true,
      );
    },
  };

  /** A store purchase, or a claim code's redemption (`viaCode`: no price, the version as read). */
  async function settle(
    actor: Actor,
    id: string,
    input: PurchaseInput,
    key: ReturnType<Idempotency['keyOf']>,
    viaCode: boolean,
  ): Promise<WriteResult<StorePurchaseResultView>> {
    {
      const quantity = input.quantity ?? 1;
      const at = new Date();
      const operationId = newId('op');
      const legs: Leg[] = [];
      const guards: Guard[] = [controlsWallet(actor.userId, input.wallet)];
      const assets: NewAsset[] = [];
      const balances: BalanceChange[] = [];
      const transfers: NewTransfer[] = [];
      const lots: NewLot[] = [];
      const events: NewEvent[] = [];
      const minted: TransferView[] = [];
      const nfts: AssetView[] = [];
      const paid: { assetId: string; amount: string }[] = [];
      const granted: { assetId: string; amount: string }[] = [];
      const caps = new Map<string, { delta: bigint; max: bigint; decimals: number; grant: number }>();
      let offer: StoreOffer;
      try {
        offer = await readOffer(id);
        // A claim code is reached by its code only.
        if (offer.codeHash && !viaCode) throw offerNotFound(id);
        await writer.assertControls(actor, [
          { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
        ]);
        // Early answers for what the plan's guard checks again inside its transaction.
        if (offer.version !== input.version)
          throw new OfferVersionChangedError(id, input.version, offer.version);
        const unavailable = unavailability(offer, at);
        if (unavailable) throw notAvailable(offer, unavailable);
        const collection = await collectionOf(offer.collectionId);
        assertCreatorMayGrant(await actingNow(reads, offer.createdBy), collection, 'offer');
        const payTo = offer.payTo as StoredAddress;
        const itemPrices: ItemPrice[] = [];
        for (const [i, item] of offer.price.entries()) {
          if ('nft' in item) {
            itemPrices.push({ index: i, ...item.nft });
            continue;
          }
          const currency = await writer.factsOf(item.assetId);
          const amount =
            parseAmount(item.amount, currency.decimals, { pointer: '/body', positive: true }) *
            BigInt(quantity);
          paid.push({ assetId: currency.id, amount: formatAmount(amount, currency.decimals) });
          // The studio buying in its own store pays itself: nothing moves.
          if (payTo !== input.wallet)
            legs.push({
              asset: currency,
              amount,
              from: input.wallet,
              to: payTo,
              place: { pointer: '/body/wallet', label: `Price ${i}: ` },
            });
        }
        // Items by template: burned from the buyer, named in `paid` one by one after the currencies.
        const burns = await itemLegs(reads, writer, {
          collectionId: offer.collectionId,
          prices: itemPrices,
          quantity,
          wallet: input.wallet,
          items: input.items ?? [],
          at,
        });
        legs.push(...burns);
        for (const burn of burns) paid.push({ assetId: burn.asset.id, amount: '1' });
        for (let unit = 0; unit < quantity; unit++) {
          for (const [i, item] of offer.grants.entries()) {
            if ('nft' in item) {
              // Issue 36: a timed grant (a rental) ends `expiresInSeconds` after the purchase.
              const { expiresInSeconds, ...template } = item.nft;
              const parts = nftMintParts(
                expiresInSeconds === undefined
                  ? template
                  : { ...template, expiresAt: new Date(at.getTime() + expiresInSeconds * 1000) },
                offer.collectionId,
                offer.createdBy,
                input.wallet,
                at,
              );
              assets.push(parts.asset);
              balances.push(parts.balance);
              events.push(parts.event);
              nfts.push(parts.view);
              granted.push({ assetId: parts.asset.id, amount: '1' });
              continue;
            }
            const currency = await writer.factsOf(item.assetId);
            const amount = parseAmount(item.amount, currency.decimals, { pointer: '/body', positive: true });
            const parts = currencyMintParts(
              { id: currency.id, collectionId: offer.collectionId, decimals: currency.decimals },
              input.wallet,
              amount,
              actor.userId,
              at,
            );
            balances.push(parts.balance);
            transfers.push(parts.transfer);
            // Issue 36: a timed currency grant is a lot ending `expiresInSeconds` after the purchase.
            if (item.expiresInSeconds !== undefined)
              lots.push(timedLot(parts.transfer, new Date(at.getTime() + item.expiresInSeconds * 1000)));
            events.push(parts.event);
            minted.push(parts.view);
            const cap = caps.get(currency.id);
            if (cap) cap.delta += amount;
            else {
              const [row] = await reads.all(MAX_SUPPLY, [currency.id]);
              caps.set(currency.id, {
                delta: amount,
                max: row?.max_supply == null ? UINT256_MAX : amountOf(row.max_supply),
                decimals: currency.decimals,
                grant: i,
              });
            }
          }
        }
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      // Currency grants as one line each (the units summed), NFTs one line each.
      const currencyTotals = new Map<string, string>();
      for (const [assetId, { delta, decimals }] of caps)
        currencyTotals.set(assetId, formatAmount(delta, decimals));
      const grantedLines = [
        ...[...currencyTotals].map(([assetId, amount]) => ({ assetId, amount })),
        ...granted,
      ];
      const supplies: { assetId: string; delta: bigint }[] = [];
      for (const [assetId, { delta, max }] of caps) {
        guards.push({ kind: 'supplyWithin', assetId, adding: delta, max });
        supplies.push({ assetId, delta });
      }
      const purchase: NewStorePurchase = {
        id: operationId,
        offerId: id,
        version: offer.version,
        collectionId: offer.collectionId,
        wallet: input.wallet,
        userId: actor.userId,
        quantity,
        paid,
        payTo: offer.payTo as StoredAddress,
        granted: grantedLines,
        createdAt: at,
      };
      const view: StorePurchaseView = {
        id: operationId,
        offerId: id,
        version: offer.version,
        collection: offer.collectionId,
        wallet: formatAddress(input.wallet),
        quantity,
        paid,
        payTo: formatAddress(offer.payTo),
        granted: grantedLines,
        createdAt: at.toISOString(),
      };
      events.push({
        type: 'storePurchase',
        occurredAt: at,
        data: view,
        assetId: grantedLines[0].assetId,
        collectionId: offer.collectionId,
        wallets: offer.payTo === ZERO_ADDRESS ? [input.wallet] : [input.wallet, offer.payTo],
        fromWallet: input.wallet,
        toWallet: offer.payTo === ZERO_ADDRESS ? null : offer.payTo,
      });
      // The guard's refusal is read after the plan (the offer as it is then): `refuse` is synchronous.
      let refusedByOffer: GuardFailure | undefined;
      try {
        return await writer.apply(
          actor,
          legs,
          key,
          at,
          (payments) => ({
            status: 201,
            body: { id: operationId, purchase: view, transfers: [...payments, ...minted], nfts },
            headers: {},
          }),
          {
            leading: [
              {
                kind: 'offerAvailable',
                offerId: id,
                version: offer.version,
                wallet: input.wallet,
                quantity,
                at,
              },
            ],
            guards,
            assets,
            balances,
            supplies,
            transfers,
            lots,
            events,
            operationId,
            stores: {
              offerSales: [{ offerId: id, wallet: input.wallet, quantity }],
              storePurchases: [purchase],
            },
            refuse: (failure) => {
              if (failure.guard.kind !== 'offerAvailable') return undefined;
              refusedByOffer = failure;
              return new Error('offer refused');
            },
            rejected: (failure) => {
              const { guard, found = 0n } = failure;
              if (guard.kind === 'controls') return new WalletNotControlledError(guard.wallet);
              if (guard.kind !== 'supplyWithin') return new Error(`Unexpected guard ${guard.kind}.`);
              const cap = caps.get(guard.assetId);
              if (!cap) return new Error(`Unexpected supply guard ${guard.assetId}.`);
              return new MaxSupplyExceededError(
                `Grant ${cap.grant}: the purchase mints ${formatAmount(cap.delta, cap.decimals)} ${guard.assetId}, which would bring the supply to ${formatAmount(found + cap.delta, cap.decimals)}, past its max supply ${formatAmount(cap.max, cap.decimals)}.`,
              );
            },
          },
        );
      } catch (error) {
        if (refusedByOffer) throw (await offerRefusal(id, input, refusedByOffer, viaCode)) ?? error;
        throw error;
      }
    }
  }

  return service;
}

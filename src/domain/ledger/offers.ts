// Marketplace offers (issue 35): a bidder offers a price for one NFT, for any NFT of a collection, or
// for any NFT of a collection having one attribute value (a trait offer); the price is RESERVED in
// the bidder's holding while the offer is open (`holding.reserved`: still held, never spendable:
// every `holds` guard sees only the free part), so an offer never promises money it does not have
// and never pays twice.
//
//   make:    guards: the bidder controls its wallet and holds the price free;
//            rows:   the offer (open), the price reserved, `offerCreated`.
//   accept:  guards: the offer still open and unexpired (`offerOpen`, which locks its row: of two
//                    acceptances, or an acceptance and a cancellation, exactly one applies), the
//                    holder controls its wallet, holds the item and it may move, the reservation
//                    still holds the price (`reservedAtLeast`); for a trait offer, the item's
//                    metadata still at the version whose attributes were checked (`assetVersion`:
//                    a change committing meanwhile refuses the plan; the acceptance reads again);
//            rows:   the item to the bidder, the price split (seller, studio royalty, deployment
//                    fee) paid from the reservation, the offer accepted, the sale row, the market
//                    price, the item's listings ended, the events, all under one `op_` id.
//   cancel / expire: guard `offerOpen` (without expiry); rows: the offer closed, the reservation
//                    released, `offerEnded`.

import type { FilterQuery } from '@mikro-orm/core';
import { Offer, type OfferStatus } from '../../db/entities/Offer.ts';
import type { Orm } from '../../db/orm.ts';
import type { ReadStatements } from '../../db/read-statements.ts';
import { controlsWallet } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import type { AssetRow } from './asset-rows.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { Idempotency, IdempotencyKey, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { type AssetFacts, insufficientBalance, type Leg } from './legs.ts';
import type {
  GuardFailure,
  LedgerStore,
  NewEvent,
  NewOffer,
  NewPrice,
  NewSale,
  OfferStatusChange,
} from './store/plan.ts';
import type { MarketSettingsView, OfferAcceptanceView, OfferView, SaleView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

export interface CreateOfferInput {
  wallet: StoredAddress;
  assetId?: string;
  collection?: string;
  /** With `collection`: a trait offer, for the NFTs having this attribute value. */
  trait?: OfferTrait;
  currency: string;
  price: string;
  expiresIn?: number;
}

export interface OfferTrait {
  type: string;
  value: string;
}

/** An asset's attributes as stored (the contract's AssetAttribute; older rows may lack any). */
export type Attributes = { trait_type?: unknown; value?: unknown }[] | undefined;

/** Whether the attributes hold the trait: its `trait_type`, its value as text (`7`, `true`). */
function hasTrait(attributes: Attributes, trait: OfferTrait): boolean {
  return Boolean(attributes?.some((a) => a.trait_type === trait.type && String(a.value) === trait.value));
}

/** The distinct attribute values of the attributes, as trait offers name them. */
export function traitsOf(attributes: Attributes): OfferTrait[] {
  const seen = new Map<string, OfferTrait>();
  for (const a of attributes ?? []) {
    if (typeof a.trait_type !== 'string' || a.value === undefined || a.value === null) continue;
    const trait = { type: a.trait_type, value: String(a.value) };
    seen.set(JSON.stringify([trait.type, trait.value]), trait);
  }
  return [...seen.values()];
}

export interface OfferFilters {
  collection?: string;
  bidder?: StoredAddress;
  assetId?: string;
  status?: OfferView['status'];
  limit: number;
  cursor?: string;
}

export interface OfferMethods {
  createOffer(
    actor: Actor,
    input: CreateOfferInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<OfferView>>;
  getOffer(id: string): Promise<OfferView>;
  listOffers(filters: OfferFilters): Promise<Page<OfferView>>;
  cancelOffer(actor: Actor, id: string): Promise<OfferView>;
  acceptOffer(
    actor: Actor,
    id: string,
    input: { wallet: StoredAddress; assetId?: string },
    idempotencyKey?: string,
  ): Promise<WriteResult<OfferAcceptanceView>>;
  /** Closes the open offers past their expiry (at most `limit`), each in its own plan; how many. */
  expireOffers(now: Date, limit: number): Promise<number>;
}

/** What the offers take from the market service (./market.ts). */
export interface OfferContext {
  orm: Orm;
  reads: ReadStatements;
  idempotency: Idempotency;
  store: LedgerStore;
  writer: LegWriter;
  settingsOf(collectionId: string): Promise<MarketSettingsView>;
  collectionOf(collectionId: string): Promise<{ id: string; ownerId: string }>;
  acceptedCurrency(settings: MarketSettingsView, currencyId: string): Promise<AssetFacts>;
  shares(
    settings: MarketSettingsView,
    price: bigint,
  ): Promise<{
    royaltyWallet: StoredAddress | undefined;
    feeWallet: StoredAddress | null;
    split: { fee: bigint; royalty: bigint; sellerProceeds: bigint };
  }>;
  saleView(sale: NewSale): Promise<SaleView>;
  marketPrice(
    sale: NewSale,
    body: SaleView,
    decimals: number,
    by: string,
  ): { row: NewPrice; event: NewEvent };
}

export class OfferNotOpenError extends ConflictError {
  constructor(id: string, status: string) {
    super(
      status === 'expired' ? `The offer ${id} has expired.` : `The offer ${id} was ${status}.`,
      '/problems/offer-not-open',
    );
  }
}

class OwnOfferError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/own-offer');
  }
}

/** A trait offer's acceptance refused by its `assetVersion` guard: the item's metadata changed. */
class MetadataChangedError extends Error {}

/** How many times an acceptance of a trait offer reads the item again when its metadata changed. */
const ACCEPT_ATTEMPTS = 3;

class OfferItemMismatchError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/offer-item-mismatch');
  }
}

const offerNotFound = (id: string) => new NotFoundError(`No offer with id ${id}.`);

/** An offer row as read. */
interface OfferRow extends NewOffer {
  status: OfferStatus;
  updatedAt: Date;
  operationId: string | null;
  soldAssetId: string | null;
  closedBy: string | null;
}

function rowOf(offer: Offer): OfferRow {
  return {
    id: offer.id,
    status: offer.status,
    bidderUserId: offer.bidderUserId,
    bidderWallet: offer.bidderWallet as StoredAddress,
    assetId: offer.assetId ?? null,
    collectionId: offer.collectionId,
    trait:
      offer.traitType != null && offer.traitValue != null
        ? { type: offer.traitType, value: offer.traitValue }
        : null,
    currencyId: offer.currencyId,
    price: offer.price as bigint,
    expiresAt: offer.expiresAt ?? null,
    createdAt: offer.createdAt,
    updatedAt: offer.updatedAt,
    operationId: offer.operationId ?? null,
    soldAssetId: offer.soldAssetId ?? null,
    closedBy: offer.closedBy ?? null,
  };
}

/** Open and past its expiry reads as `expired`. */
function statusOf(offer: Pick<OfferRow, 'status' | 'expiresAt'>, now: Date): OfferStatus {
  return offer.status === 'open' && offer.expiresAt !== null && offer.expiresAt <= now
    ? 'expired'
    : offer.status;
}

function offerView(offer: OfferRow, decimals: number, now = new Date()): OfferView {
  return {
    id: offer.id,
    status: statusOf(offer, now),
    bidder: formatAddress(offer.bidderWallet),
    assetId: offer.assetId,
    collection: offer.collectionId,
    trait: offer.trait,
    currency: offer.currencyId,
    price: formatAmount(offer.price, decimals),
    expiresAt: offer.expiresAt?.toISOString() ?? null,
    createdAt: offer.createdAt.toISOString(),
    updatedAt: offer.updatedAt.toISOString(),
    operationId: offer.operationId,
    soldAssetId: offer.soldAssetId,
  };
}

/**
 * An offer's event: concerns its bidder's wallet (as `from`). A collection offer names no asset: its
 * outbox row's asset is '' (no asset filter matches it; its collection's does).
 */
function offerEvent(type: 'offerCreated' | 'offerEnded', view: OfferView, at: Date): NewEvent {
  const bidder = view.bidder.toLowerCase();
  return {
    type,
    occurredAt: at,
    data: view,
    assetId: view.assetId ?? '',
    collectionId: view.collection,
    wallets: [bidder],
    fromWallet: bidder,
    toWallet: null,
  };
}

const OWNER = 'select owner from asset where id = ?';
const METADATA = 'select metadata, metadata_version from asset where id = ?';

export function createOfferMethods(ctx: OfferContext): OfferMethods {
  const { orm, reads, idempotency, store, writer } = ctx;

  async function readOffer(id: string): Promise<OfferRow> {
    const offer = await orm.em.fork().findOne(Offer, { id });
    if (!offer) throw offerNotFound(id);
    return rowOf(offer);
  }

  const decimalsOf = async (offer: Pick<OfferRow, 'currencyId'>) =>
    (await writer.factsOf(offer.currencyId)).decimals;

  function notOpen(id: string, failure: GuardFailure): Error | undefined {
    if (failure.guard.kind !== 'offerOpen') return undefined;
    if (failure.reason === 'missing') return offerNotFound(id);
    return new OfferNotOpenError(id, failure.reason ?? 'closed');
  }

  /** The offer closed without a sale (cancelled, expired): its status change, release and event. */
  async function release(offer: OfferRow, status: 'cancelled' | 'expired', by: string | null, at: Date) {
    const change: OfferStatusChange = {
      offerId: offer.id,
      status,
      by,
      operationId: null,
      soldAssetId: null,
      at,
    };
    const view = offerView({ ...offer, status, closedBy: by, updatedAt: at }, await decimalsOf(offer), at);
    return {
      view,
      plan: {
        at,
        guards: [{ kind: 'offerOpen' as const, offerId: offer.id }],
        offerStatuses: [change],
        reserves: [{ assetId: offer.currencyId, wallet: offer.bidderWallet, delta: -offer.price }],
        events: [offerEvent('offerEnded', view, at)],
      },
    };
  }

  /** One attempt at an acceptance (see `acceptOffer`). */
  async function acceptOnce(
    actor: Actor,
    id: string,
    input: { wallet: StoredAddress; assetId?: string },
    key: IdempotencyKey | undefined,
  ): Promise<WriteResult<OfferAcceptanceView>> {
    let offer: OfferRow;
    let item: AssetFacts;
    let currency: AssetFacts;
    let settings: MarketSettingsView;
    let version: number | undefined;
    try {
      offer = await readOffer(id);
      const status = statusOf(offer, new Date());
      if (status !== 'open') throw new OfferNotOpenError(id, status);
      await writer.assertControls(actor, [
        { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
      ]);
      const assetId = input.assetId ?? offer.assetId;
      const kind = offer.trait ? 'trait' : 'collection';
      if (assetId === null)
        throw new ValidationError(`A ${kind} offer is accepted with one of its NFTs: give \`assetId\`.`, [
          { pointer: '/body/assetId', detail: `required for a ${kind} offer` },
        ]);
      if (offer.assetId !== null && assetId !== offer.assetId)
        throw new OfferItemMismatchError(`The offer ${id} is for ${offer.assetId}, not ${assetId}.`);
      item = await writer.factsOf(assetId);
      if (item.kind !== 'nft' || item.collectionId !== offer.collectionId)
        throw new OfferItemMismatchError(
          `The offer ${id} is for an NFT of ${offer.collectionId}; ${assetId} is not one.`,
        );
      if (offer.trait) {
        // The attributes as of one metadata version; the plan is guarded by that version.
        const [row] = await reads.all<Pick<AssetRow, 'metadata' | 'metadata_version'>>(METADATA, [item.id]);
        const metadata = reads.json(row?.metadata) as { attributes?: Attributes } | null;
        if (!hasTrait(metadata?.attributes, offer.trait))
          throw new OfferItemMismatchError(
            `The offer ${id} is for an NFT of ${offer.collectionId} with ${offer.trait.type} ${offer.trait.value}; ${assetId} lacks it.`,
          );
        version = Number(row?.metadata_version ?? 0);
      }
      if (input.wallet === offer.bidderWallet || actor.userId === offer.bidderUserId)
        throw new OwnOfferError(`The offer ${id} is your own: you cannot accept it.`);
      settings = await ctx.settingsOf(offer.collectionId);
      if (!settings.tradingEnabled)
        throw new ConflictError(
          `The studio of ${offer.collectionId} turned trading off: its items cannot be sold.`,
          '/problems/trading-disabled',
        );
      currency = await writer.factsOf(offer.currencyId);
    } catch (error) {
      return earlierAnswerOr(idempotency, key, error);
    }
    const { royaltyWallet, feeWallet, split } = await ctx.shares(settings, offer.price);
    const seller = input.wallet;
    const legs: Leg[] = [
      {
        asset: item,
        amount: 1n,
        from: seller,
        to: offer.bidderWallet,
        place: { pointer: '/body', label: '' },
      },
    ];
    // The payments come from the bidder's reservation; a share to the bidder itself does not move
    // and is released back to it.
    let released = 0n;
    const pay = (to: StoredAddress | null | undefined, amount: bigint) => {
      if (amount <= 0n) return;
      if (!to || to === offer.bidderWallet) {
        released += amount;
        return;
      }
      legs.push({
        asset: currency,
        amount,
        from: offer.bidderWallet,
        to,
        place: { pointer: '/path/offer_id', label: '' },
        fromReserved: true,
      });
    };
    pay(seller, split.sellerProceeds);
    pay(royaltyWallet, split.royalty);
    pay(feeWallet, split.fee);
    const at = new Date();
    const operationId = newId('op');
    const sale: NewSale = {
      id: operationId,
      listingId: offer.id,
      assetId: item.id,
      collectionId: offer.collectionId,
      amount: 1n,
      currencyId: currency.id,
      price: offer.price,
      ...split,
      sellerWallet: seller,
      buyerWallet: offer.bidderWallet,
      createdAt: at,
    };
    const accepted = offerView(
      {
        ...offer,
        status: 'accepted',
        closedBy: actor.userId,
        operationId,
        soldAssetId: item.id,
        updatedAt: at,
      },
      currency.decimals,
      at,
    );
    const saleBody = await ctx.saleView(sale);
    const price = ctx.marketPrice(sale, saleBody, currency.decimals, actor.userId);
    const ended = offerEvent('offerEnded', accepted, at);
    return writer.apply(
      actor,
      legs,
      key,
      at,
      (transfers) => ({
        status: 201,
        body: { id: operationId, sale: saleBody, offer: accepted, transfers },
        headers: {},
      }),
      {
        leading: [
          { kind: 'offerOpen', offerId: offer.id, at },
          ...(version === undefined ? [] : [{ kind: 'assetVersion' as const, assetId: item.id, version }]),
        ],
        offerStatuses: [
          {
            offerId: offer.id,
            status: 'accepted',
            by: actor.userId,
            operationId,
            soldAssetId: item.id,
            at,
          },
        ],
        reserves:
          released > 0n ? [{ assetId: currency.id, wallet: offer.bidderWallet, delta: -released }] : [],
        sales: [sale],
        prices: [price.row],
        events: [
          // An item offer's event is the item's; a collection offer's names its collection only.
          ended,
          {
            type: 'sale',
            occurredAt: at,
            data: saleBody,
            assetId: item.id,
            collectionId: offer.collectionId,
            wallets: [seller, offer.bidderWallet],
            fromWallet: seller,
            toWallet: offer.bidderWallet,
          },
          price.event,
        ],
        operationId,
        refuse: (failure) =>
          notOpen(id, failure) ??
          (failure.guard.kind === 'assetVersion' ? new MetadataChangedError(item.id) : undefined),
      },
    );
  }

  return {
    async createOffer(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createOffer',
        key: idempotencyKey,
        request: input,
      });
      let offer: NewOffer;
      let currency: AssetFacts;
      try {
        await writer.assertControls(actor, [
          { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
        ]);
        if ((input.assetId === undefined) === (input.collection === undefined))
          throw new ValidationError('An offer names exactly one of `assetId` (an item) and `collection`.', [
            {
              pointer: input.assetId === undefined ? '/body' : '/body/collection',
              detail: 'give exactly one of assetId and collection',
            },
          ]);
        if (input.trait !== undefined && input.collection === undefined)
          throw new ValidationError('A trait offer names its `collection`, not an `assetId`.', [
            { pointer: '/body/trait', detail: 'only with collection' },
          ]);
        let collectionId: string;
        if (input.assetId !== undefined) {
          const item = await writer.factsOf(input.assetId);
          if (item.kind !== 'nft')
            throw new ValidationError(`${input.assetId} is not an NFT: offers are made for NFTs.`, [
              { pointer: '/body/assetId', detail: 'must be an NFT' },
            ]);
          const [row] = await reads.all<Pick<AssetRow, 'owner'>>(OWNER, [item.id]);
          if (row?.owner === input.wallet)
            throw new OwnOfferError(`${formatAddress(input.wallet)} holds ${item.id} itself.`);
          collectionId = item.collectionId;
        } else {
          collectionId = (await ctx.collectionOf(input.collection as string)).id;
        }
        const settings = await ctx.settingsOf(collectionId);
        if (!settings.tradingEnabled)
          throw new ConflictError(
            `The studio of ${collectionId} turned trading off: its items cannot be offered for.`,
            '/problems/trading-disabled',
          );
        currency = await ctx.acceptedCurrency(settings, input.currency);
        const price = parseAmount(input.price, currency.decimals, {
          pointer: '/body/price',
          positive: true,
          label: 'price',
        });
        const at = new Date();
        offer = {
          id: newId('ofr'),
          bidderUserId: actor.userId,
          bidderWallet: input.wallet,
          assetId: input.assetId ?? null,
          collectionId,
          trait: input.trait ? { type: input.trait.type, value: input.trait.value } : null,
          currencyId: currency.id,
          price,
          expiresAt: input.expiresIn === undefined ? null : new Date(at.getTime() + input.expiresIn * 1000),
          createdAt: at,
        };
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = offer.createdAt;
      const view = offerView(
        { ...offer, status: 'open', updatedAt: at, operationId: null, soldAssetId: null, closedBy: null },
        currency.decimals,
        at,
      );
      const leg: Leg = {
        asset: currency,
        amount: offer.price,
        from: offer.bidderWallet,
        to: offer.bidderWallet,
        place: { pointer: '/body/price', label: '' },
      };
      return applyWrite(
        store,
        idempotency,
        key,
        {
          at,
          guards: [
            controlsWallet(actor.userId, offer.bidderWallet),
            // Issue 36: timed units of the currency are never escrowed (their lots count out).
            {
              kind: 'holds',
              assetId: currency.id,
              wallet: offer.bidderWallet,
              atLeast: offer.price,
              untimed: true,
            },
          ],
          offers: [offer],
          reserves: [{ assetId: currency.id, wallet: offer.bidderWallet, delta: offer.price }],
          events: [offerEvent('offerCreated', view, at)],
        },
        { status: 201, body: view, headers: { Location: `/api/v1/offers/${offer.id}` } },
        (failure) => {
          if (failure.guard.kind === 'controls') return new WalletNotControlledError(offer.bidderWallet);
          if (failure.guard.kind === 'holds')
            return insufficientBalance(leg, failure.found ?? 0n, offer.price);
          return new Error(`Unexpected guard ${failure.guard.kind}.`);
        },
      );
    },

    async getOffer(id) {
      const offer = await readOffer(id);
      return offerView(offer, await decimalsOf(offer));
    },

    async listOffers({ collection, bidder, assetId, status, limit, cursor }) {
      const now = new Date();
      const where: FilterQuery<Offer>[] = [];
      if (collection) where.push({ collectionId: collection });
      if (bidder) where.push({ bidderWallet: bidder });
      if (assetId) where.push({ assetId });
      if (status === 'open')
        where.push({ status: 'open', $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] });
      else if (status === 'expired')
        where.push({ $or: [{ status: 'expired' }, { status: 'open', expiresAt: { $lte: now } }] });
      else if (status) where.push({ status });
      const rows = await pageById(orm.em.fork(), Offer, where, {
        list: 'offers',
        order: 'newest',
        limit,
        cursor,
      });
      return mapPage(rows, async (row) => {
        const offer = rowOf(row);
        return offerView(offer, await decimalsOf(offer), now);
      });
    },

    async cancelOffer(actor, id) {
      const offer = await readOffer(id);
      await writer.assertControls(actor, [
        { from: offer.bidderWallet, place: { pointer: '/path', label: '' } },
      ]);
      // An expired offer is still cancellable: the cancellation releases its price.
      if (offer.status !== 'open') throw new OfferNotOpenError(id, offer.status);
      const { view, plan } = await release(offer, 'cancelled', actor.userId, new Date());
      const result = await applyWrite(
        store,
        idempotency,
        undefined,
        { ...plan, guards: [...plan.guards, controlsWallet(actor.userId, offer.bidderWallet)] },
        { status: 200, body: view, headers: {} },
        (failure) =>
          notOpen(id, failure) ??
          (failure.guard.kind === 'controls'
            ? new WalletNotControlledError(offer.bidderWallet)
            : new Error(`Unexpected guard ${failure.guard.kind}.`)),
      );
      return result.body;
    },

    async acceptOffer(actor, id, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'acceptOffer',
        key: idempotencyKey,
        request: { id, ...input },
      });
      // A trait offer's item whose metadata changed between the read and the plan: read it again
      // (it may no longer have the trait: 409 offer-item-mismatch then).
      for (let attempt = 1; ; attempt++) {
        try {
          return await acceptOnce(actor, id, input, key);
        } catch (error) {
          if (!(error instanceof MetadataChangedError)) throw error;
          if (attempt >= ACCEPT_ATTEMPTS)
            throw new ConflictError(
              `The metadata of ${error.message} kept changing while the offer ${id} was accepted: try again.`,
            );
        }
      }
    },

    async expireOffers(now, limit) {
      const rows = await orm.em
        .fork()
        .find(
          Offer,
          { status: 'open', expiresAt: { $lte: now } },
          { orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }], limit },
        );
      let expired = 0;
      for (const row of rows) {
        const { plan } = await release(rowOf(row), 'expired', null, new Date());
        // Accepted or cancelled meanwhile: the guard refuses, nothing changes (exactly once).
        if ((await store.apply(plan)).outcome === 'applied') expired++;
      }
      return expired;
    },
  };
}

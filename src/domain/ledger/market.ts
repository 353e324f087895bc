// The marketplace (issue 35): fixed-price listings bought in ONE ledger plan through the one ledger
// store, the studios' settings (trading on or off, royalty, accepted currencies), the sales history
// and the market figures (floor, last sale, 24 h volume).
//
// A listing reserves nothing: the item stays in the seller's wallet. A purchase is the plan
//   guards: the listing still active (`listingActive`, which locks its row: of two buyers exactly
//           one wins), the seller still controls its wallet, holds the item and the item may move,
//           the buyer controls its wallet and holds the price;
//   rows:   the item to the buyer, the price split (seller, studio royalty, deployment fee) from the
//           buyer, the listing sold, the sale row, a market price observation for an NFT, the events
//           (`newTransfer`s, `sale`, `priceUpdate`), all under one `op_` id.
// Royalty and fee are rounded DOWN to base units of the currency and the seller receives the rest, so
// seller + royalty + fee == price exactly. A move, burn or freeze of a listed NFT ends its listings in
// its own plan (./listings.ts); what still slips through is refused at the purchase, which then ends
// the listing (`endReason` unavailable) with its event.

import type { FilterQuery } from '@mikro-orm/core';
import type { MarketConfig } from '../../config/index.ts';
import type { Database } from '../../db/database.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { Collection } from '../../db/entities/Collection.ts';
import { CollectionMarket } from '../../db/entities/CollectionMarket.ts';
import { Listing, type ListingEndReason } from '../../db/entities/Listing.ts';
import { Offer } from '../../db/entities/Offer.ts';
import { Sale } from '../../db/entities/Sale.ts';
import { Wallet } from '../../db/entities/Wallet.ts';
import { inTransaction } from '../../db/transactions.ts';
import { auditDraft, recordAudit } from '../audit.ts';
import { assertCollectionPowers, controlsWallet } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import { type AuctionMethods, createAuctionMethods } from './auctions.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { type AssetFacts, type Leg, legGuards, legRefusal } from './legs.ts';
import {
  closedListing,
  LISTING_COLUMNS,
  type ListingDecimals,
  type ListingRow,
  listingEvent,
  listingRowOf,
  listingStatusOf,
  listingView,
} from './listings.ts';
import { checkPriceOrder, listingsByPrice, traitFloorQuery } from './listings-by-price.ts';
import { type Attributes, createOfferMethods, type OfferMethods, traitsOf } from './offers.ts';
import { newPriceEvent } from './outbox.ts';
import { MARKET_SOURCE } from './prices.ts';
import type { GuardFailure, LedgerStore, NewEvent, NewSale } from './store/plan.ts';
import type { ListingView, MarketSettingsView, MarketStatsView, PurchaseView, SaleView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

export const DEFAULT_MARKET_CONFIG: MarketConfig = {
  feeBps: 0,
  feeWallet: null,
  maxRoyaltyBps: 1000,
  sweepMs: 5000,
};

export interface CreateListingInput {
  wallet: StoredAddress;
  assetId: string;
  amount?: string;
  currency: string;
  price: string;
  expiresIn?: number;
}

export interface ListingFilters {
  collection?: string;
  seller?: StoredAddress;
  assetId?: string;
  status?: ListingView['status'];
  currency?: string;
  /** `newest` (the default) or `price`: the buyable listings of one currency, cheapest first. */
  sort?: 'newest' | 'price';
  limit: number;
  cursor?: string;
}

export interface MarketSettingsInput {
  tradingEnabled?: boolean;
  royaltyBps?: number;
  currencies?: string[] | null;
  royaltyWallet?: StoredAddress | null;
}

export interface MarketService extends OfferMethods, AuctionMethods {
  settings(collectionId: string): Promise<MarketSettingsView>;
  setSettings(actor: Actor, collectionId: string, input: MarketSettingsInput): Promise<MarketSettingsView>;
  createListing(
    actor: Actor,
    input: CreateListingInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<ListingView>>;
  getListing(id: string): Promise<ListingView>;
  listListings(filters: ListingFilters): Promise<Page<ListingView>>;
  cancelListing(actor: Actor, id: string): Promise<ListingView>;
  buy(
    actor: Actor,
    id: string,
    wallet: StoredAddress,
    idempotencyKey?: string,
  ): Promise<WriteResult<PurchaseView>>;
  listSales(filters: {
    collection?: string;
    assetId?: string;
    limit: number;
    cursor?: string;
  }): Promise<Page<SaleView>>;
  collectionStats(
    collectionId: string,
    currency: string,
    trait?: { type: string; value: string },
  ): Promise<MarketStatsView>;
  assetStats(assetId: string, currency: string): Promise<MarketStatsView>;
  /** Ends the active listings past their expiry (at most `limit`), each in its own plan; how many. */
  expireListings(now: Date, limit: number): Promise<number>;
}

export class ListingNotActiveError extends ConflictError {
  constructor(id: string, status: string) {
    super(
      status === 'expired'
        ? `The listing ${id} has expired.`
        : status === 'unavailable'
          ? `The listing ${id} is no longer buyable: its seller no longer holds or may not move the item. It has ended.`
          : `The listing ${id} was ${status}.`,
      '/problems/listing-not-active',
    );
  }
}

export class TradingDisabledError extends ConflictError {
  constructor(collectionId: string) {
    super(
      `The studio of ${collectionId} turned trading off: its items cannot be listed or bought.`,
      '/problems/trading-disabled',
    );
  }
}

class CurrencyNotAcceptedError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/currency-not-accepted');
  }
}

const listingNotFound = (id: string) => new NotFoundError(`No listing with id ${id}.`);
const collectionNotFound = (id: string) => new NotFoundError(`No collection with id ${id}.`);

const BPS = 10_000n;
const PRICE_DECIMALS = 18;
const DAY_MS = 86_400_000;
/** The most open offers a best offer reads from the top of its index (the expired ones skipped). */
const BEST_OFFER_SCAN = 100;
/** How many times a listing reads its item again when the item's metadata changed meanwhile. */
const LISTING_ATTEMPTS = 5;

/** A listing refused by its `assetVersion` guard: its item's metadata changed since it was read. */
class ItemMetadataChangedError extends Error {
  constructor(assetId: string) {
    super(`The metadata of ${assetId} kept changing while it was listed.`);
  }
}

/** The price split, in base units: royalty and fee rounded down, the seller the rest (exact). */
export function splitPrice(price: bigint, royaltyBps: number, feeBps: number) {
  const fee = (price * BigInt(feeBps)) / BPS;
  const royaltyWanted = (price * BigInt(royaltyBps)) / BPS;
  const royalty = royaltyWanted < price - fee ? royaltyWanted : price - fee;
  return { fee, royalty, sellerProceeds: price - fee - royalty };
}

function rowOfEntity(listing: Listing): ListingRow {
  return {
    id: listing.id,
    status: listing.status,
    endReason: listing.endReason ?? null,
    sellerUserId: listing.sellerUserId,
    sellerWallet: listing.sellerWallet as StoredAddress,
    assetId: listing.assetId,
    collectionId: listing.collectionId,
    amount: listing.amount as bigint,
    currencyId: listing.currencyId,
    price: listing.price as bigint,
    expiresAt: listing.expiresAt ?? null,
    createdAt: listing.createdAt,
    updatedAt: listing.updatedAt,
    operationId: listing.operationId ?? null,
    closedBy: listing.closedBy ?? null,
  };
}

export function createMarketService(
  { orm, reads }: Database,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter,
  config: MarketConfig = DEFAULT_MARKET_CONFIG,
): MarketService {
  async function collectionOf(id: string) {
    const collection = await orm.em.fork().findOne(Collection, { id }, { fields: ['id', 'owner'] });
    if (!collection) throw collectionNotFound(id);
    return { id, ownerId: collection.owner.id };
  }

  async function settingsOf(collectionId: string): Promise<MarketSettingsView> {
    const row = await orm.em.fork().findOne(CollectionMarket, { collectionId });
    return {
      collection: collectionId,
      tradingEnabled: row?.tradingEnabled ?? true,
      royaltyBps: row?.royaltyBps ?? 0,
      currencies: row?.currencies ?? null,
      royaltyWallet: row?.royaltyWallet ? formatAddress(row.royaltyWallet) : null,
    };
  }

  async function readListing(id: string): Promise<ListingRow> {
    const [row] = await reads.all(`select ${LISTING_COLUMNS} from listing where id = ?`, [id]);
    if (!row) throw listingNotFound(id);
    return listingRowOf(row, reads);
  }

  const decimalsOf = (listing: ListingRow): Promise<ListingDecimals> => writer.listingDecimals(listing);

  async function saleView(sale: NewSale): Promise<SaleView> {
    const [asset, currency] = [await writer.factsOf(sale.assetId), await writer.factsOf(sale.currencyId)];
    const money = (units: bigint) => formatAmount(units, currency.decimals);
    return {
      id: sale.id,
      // The sale row's listing_id names what it settled: a listing (lst_) or an offer (ofr_).
      listingId: sale.listingId.startsWith('lst_') ? sale.listingId : null,
      offerId: sale.listingId.startsWith('ofr_') ? sale.listingId : null,
      auctionId: sale.listingId.startsWith('auc_') ? sale.listingId : null,
      assetId: sale.assetId,
      collection: sale.collectionId,
      amount: formatAmount(sale.amount, asset.decimals),
      currency: sale.currencyId,
      price: money(sale.price),
      sellerProceeds: money(sale.sellerProceeds),
      royalty: money(sale.royalty),
      fee: money(sale.fee),
      seller: formatAddress(sale.sellerWallet),
      buyer: formatAddress(sale.buyerWallet),
      createdAt: sale.createdAt.toISOString(),
    };
  }

  function saleOfEntity(sale: Sale): NewSale {
    return {
      ...sale,
      amount: sale.amount as bigint,
      price: sale.price as bigint,
      royalty: sale.royalty as bigint,
      fee: sale.fee as bigint,
      sellerProceeds: sale.sellerProceeds as bigint,
      sellerWallet: sale.sellerWallet as StoredAddress,
      buyerWallet: sale.buyerWallet as StoredAddress,
    };
  }

  /** The currency a price is in: a ledger currency the collection accepts (409 otherwise). */
  async function acceptedCurrency(settings: MarketSettingsView, currencyId: string): Promise<AssetFacts> {
    const currency = await writer.factsOf(currencyId);
    if (currency.kind !== 'fungible')
      throw new CurrencyNotAcceptedError(`${currencyId} is not a currency: a price is paid in a currency.`);
    if (settings.currencies !== null && !settings.currencies.includes(currencyId))
      throw new CurrencyNotAcceptedError(
        `The collection ${settings.collection} accepts prices in ${settings.currencies.join(', ') || 'no currency'}, not ${currencyId}.`,
      );
    return currency;
  }

  /** Ends an active listing (by nobody: the service), ignoring one closed meanwhile. */
  async function endListing(listing: ListingRow, reason: ListingEndReason, by: string | null = null) {
    const at = new Date();
    const closed = closedListing(listing, await decimalsOf(listing), { status: 'ended', reason, by, at });
    await store.apply({
      at,
      guards: [{ kind: 'listingActive', listingId: listing.id, at }],
      listingStatuses: [closed.change],
      events: [closed.event],
    });
  }

  function notActive(id: string, failure: GuardFailure): Error | undefined {
    if (failure.guard.kind !== 'listingActive') return undefined;
    if (failure.reason === 'missing') return listingNotFound(id);
    return new ListingNotActiveError(id, failure.reason ?? 'closed');
  }

  /** A price as stored for the price history: 18 fractional digits. */
  function scaledPrice(price: bigint, decimals: number): bigint {
    return price * 10n ** BigInt(PRICE_DECIMALS - decimals);
  }

  /**
   * The highest open, unexpired offer in `currency` among the scopes (a collection's collection
   * offers; an item's own offers; the trait offers for one attribute value): each read from its
   * price index downwards, first row kept.
   */
  async function bestOffer(
    scopes: (
      | { collectionId: string; assetId: null; traitType: null }
      | { assetId: string }
      | { collectionId: string; traitType: string; traitValue: string }
    )[],
    currency: string,
  ): Promise<Offer | null> {
    const em = orm.em.fork();
    const now = Date.now();
    let best: Offer | null = null;
    for (const scope of scopes) {
      // The expiry is checked here, not in SQL: with it PostgreSQL may sort every match rather than
      // walk the index. Open offers past their expiry are few (the keeper ends them every
      // MARKET_SWEEP_MS): the top row is read first, and only when it has expired the next rows, at
      // most BEST_OFFER_SCAN.
      const read = (limit: number) =>
        em.find(
          Offer,
          { ...scope, status: 'open', currencyId: currency },
          { orderBy: [{ price: 'desc' }, { id: 'desc' }], limit },
        );
      const unexpired = (offer: Offer) => !offer.expiresAt || offer.expiresAt.getTime() > now;
      const [first] = await read(1);
      const top = !first || unexpired(first) ? first : (await read(BEST_OFFER_SCAN)).find(unexpired);
      if (top && (!best || (top.price as bigint) > (best.price as bigint))) best = top;
    }
    return best;
  }

  async function stats(
    where: { collectionId: string } | { assetId: string },
    currency: string,
    offerScopes: Parameters<typeof bestOffer>[0],
    floorOf: () => Promise<Listing | null>,
  ): Promise<MarketStatsView> {
    const facts = await writer.factsOf(currency).catch(() => undefined);
    const decimals = facts?.decimals ?? 0;
    const em = orm.em.fork();
    const floor = await floorOf();
    const offer = await bestOffer(offerScopes, currency);
    const [last] = await em.find(
      Sale,
      { ...where, currencyId: currency },
      { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], limit: 1 },
    );
    // The day's prices as raw rows: hydrating an entity a sale cost ~10 µs, 20 ms a read for a
    // collection with 2,000 sales that day (scripts/bench/market.ts). Still linear in the day's sales.
    const day: { price: string | number }[] = await em
      .createQueryBuilder(Sale)
      .select('price')
      .where({ ...where, currencyId: currency, createdAt: { $gte: new Date(Date.now() - DAY_MS) } })
      .execute('all', false);
    const volume = day.reduce((sum, sale) => sum + BigInt(String(sale.price)), 0n);
    return {
      currency,
      floor: floor ? formatAmount(floor.price as bigint, decimals) : null,
      floorListingId: floor?.id ?? null,
      bestOffer: offer ? formatAmount(offer.price as bigint, decimals) : null,
      bestOfferId: offer?.id ?? null,
      lastSale: last ? await saleView(saleOfEntity(last)) : null,
      volume24h: formatAmount(volume, decimals),
      sales24h: day.length,
    };
  }

  /** Who is paid what of `price`: the studio's royalty wallet, the fee wallet, the exact split. */
  async function shares(settings: MarketSettingsView, price: bigint) {
    const collection = await collectionOf(settings.collection);
    const royaltyWallet =
      (settings.royaltyWallet?.toLowerCase() as StoredAddress | undefined) ??
      ((
        await orm.em
          .fork()
          .findOne(
            Wallet,
            { user: collection.ownerId },
            { orderBy: [{ createdAt: 'asc' }, { address: 'asc' }] },
          )
      )?.address as StoredAddress | undefined);
    const royaltyBps = royaltyWallet ? Math.min(settings.royaltyBps, config.maxRoyaltyBps) : 0;
    const feeWallet = config.feeWallet as StoredAddress | null;
    return { royaltyWallet, feeWallet, split: splitPrice(price, royaltyBps, feeWallet ? config.feeBps : 0) };
  }

  /** A sale's market price observation and `priceUpdate` event (an NFT's price is its last sale). */
  function marketPrice(sale: NewSale, saleBody: SaleView, decimals: number, by: string) {
    const price = {
      assetId: sale.assetId,
      price: saleBody.price,
      currency: sale.currencyId,
      source: MARKET_SOURCE,
      observedAt: sale.createdAt.toISOString(),
    };
    return {
      row: {
        ...price,
        priceScaled: scaledPrice(sale.price, decimals),
        observedAt: sale.createdAt,
        postedBy: by,
        createdAt: sale.createdAt,
      },
      event: newPriceEvent(price, sale.collectionId, sale.createdAt),
    };
  }

  const context = {
    orm,
    reads,
    idempotency,
    store,
    writer,
    settingsOf,
    collectionOf,
    acceptedCurrency,
    shares,
    saleView,
    marketPrice,
  };
  const offers = createOfferMethods(context);
  const auctions = createAuctionMethods(context);

  const buyable = () => ({
    status: 'active' as const,
    $or: [{ expiresAt: null }, { expiresAt: { $gt: new Date() } }],
  });

  return {
    ...offers,
    ...auctions,

    async settings(collectionId) {
      await collectionOf(collectionId);
      return settingsOf(collectionId);
    },

    async setSettings(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'set its marketplace settings');
      if (input.royaltyBps !== undefined && input.royaltyBps > config.maxRoyaltyBps)
        throw new ValidationError(
          `A royalty is at most ${config.maxRoyaltyBps} basis points on this deployment.`,
          [{ pointer: '/body/royaltyBps', detail: `must be at most ${config.maxRoyaltyBps}` }],
        );
      for (const [i, currency] of (input.currencies ?? []).entries()) {
        const facts = await writer.factsOf(currency).catch(() => undefined);
        if (facts?.kind !== 'fungible')
          throw new ValidationError(`${currency} is not a currency of this ledger.`, [
            { pointer: `/body/currencies/${i}`, detail: 'is not a currency' },
          ]);
      }
      const before = await settingsOf(collectionId);
      const em = orm.em.fork();
      const next = {
        collectionId,
        tradingEnabled: input.tradingEnabled ?? before.tradingEnabled,
        royaltyBps: input.royaltyBps ?? before.royaltyBps,
        currencies: input.currencies === undefined ? before.currencies : input.currencies,
        royaltyWallet:
          input.royaltyWallet === undefined
            ? (before.royaltyWallet?.toLowerCase() ?? null)
            : input.royaltyWallet,
        updatedAt: new Date(),
      };
      await inTransaction(orm, async (tx) => {
        await tx.upsert(CollectionMarket, next);
        await recordAudit(
          tx,
          auditDraft(
            'collection.marketChanged',
            { type: 'collection', id: collectionId, ownerId: collection.ownerId, collectionId },
            { before, after: next },
          ),
        );
      });
      if (before.tradingEnabled && !next.tradingEnabled) {
        // Every active listing of the collection ends, each in its own plan (one sold meanwhile is left).
        const active = await em.find(Listing, { collectionId, status: 'active' }, { orderBy: { id: 'asc' } });
        for (const listing of active) await endListing(rowOfEntity(listing), 'tradingOff', actor.userId);
      }
      return settingsOf(collectionId);
    },

    async createListing(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createListing',
        key: idempotencyKey,
        request: input,
      });
      let leg: Leg;
      let currency: AssetFacts;
      let price: bigint;
      try {
        await writer.assertControls(actor, [
          { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
        ]);
        const asset = await writer.factsOf(input.assetId);
        const settings = await settingsOf(asset.collectionId);
        if (!settings.tradingEnabled) throw new TradingDisabledError(asset.collectionId);
        currency = await acceptedCurrency(settings, input.currency);
        const amount = parseAmount(input.amount ?? '1', asset.kind === 'nft' ? 0 : asset.decimals, {
          pointer: '/body/amount',
          positive: true,
        });
        if (asset.kind === 'nft' && amount !== 1n)
          throw new ValidationError(
            'The amount of a listed NFT must be 1.',
            [{ pointer: '/body/amount', detail: 'must be 1 for an NFT' }],
            '/problems/invalid-amount',
          );
        price = parseAmount(input.price, currency.decimals, {
          pointer: '/body/price',
          positive: true,
          label: 'price',
        });
        leg = { asset, amount, from: input.wallet, to: input.wallet, place: { pointer: '/body', label: '' } };
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = new Date();
      const listing: ListingRow = {
        id: newId('lst'),
        status: 'active',
        endReason: null,
        sellerUserId: actor.userId,
        sellerWallet: input.wallet,
        assetId: leg.asset.id,
        collectionId: leg.asset.collectionId,
        amount: leg.amount,
        currencyId: currency.id,
        price,
        expiresAt: input.expiresIn === undefined ? null : new Date(at.getTime() + input.expiresIn * 1000),
        createdAt: at,
        updatedAt: at,
        operationId: null,
        closedBy: null,
      };
      const view = listingView(listing, { asset: leg.asset.decimals, currency: currency.decimals }, at);
      // The store writes the listing's trait rows from its item's metadata (the trait floor), read
      // here and guarded (`assetVersion`): a metadata change committed in between rewrote the trait
      // rows of the item's listings without this one, so the item is read again.
      for (let attempt = 1; ; attempt++) {
        const item = await orm.em
          .fork()
          .findOneOrFail(Asset, { id: leg.asset.id }, { fields: ['metadata', 'metadataVersion'] });
        try {
          // Checked now (controlled, held, free to move) for an early answer; nothing is reserved.
          return await applyWrite(
            store,
            idempotency,
            key,
            {
              at,
              guards: [
                ...legGuards(actor, [leg]),
                { kind: 'assetVersion', assetId: leg.asset.id, version: item.metadataVersion },
              ],
              listings: [{ ...listing, metadata: item.metadata }],
              events: [listingEvent('listingCreated', view, at)],
            },
            { status: 201, body: view, headers: { Location: `/api/v1/listings/${listing.id}` } },
            (failure) =>
              legRefusal([leg], failure) ??
              (failure.guard.kind === 'assetVersion'
                ? new ItemMetadataChangedError(leg.asset.id)
                : new Error(`Unexpected guard ${failure.guard.kind}.`)),
          );
        } catch (error) {
          if (!(error instanceof ItemMetadataChangedError) || attempt >= LISTING_ATTEMPTS) throw error;
        }
      }
    },

    async getListing(id) {
      const listing = await readListing(id);
      return listingView(listing, await decimalsOf(listing));
    },

    async listListings({ collection, seller, assetId, status, currency, sort, limit, cursor }) {
      const now = new Date();
      let rows: Page<Listing>;
      if (sort === 'price') {
        const filters = checkPriceOrder({ currency, collection, assetId, seller, status });
        rows = await listingsByPrice(orm.em.fork(), filters, { limit, cursor }, now);
      } else {
        const where: FilterQuery<Listing>[] = [];
        if (collection) where.push({ collectionId: collection });
        if (seller) where.push({ sellerWallet: seller });
        if (assetId) where.push({ assetId });
        if (currency) where.push({ currencyId: currency });
        if (status === 'active') where.push(buyable());
        else if (status === 'expired') where.push({ status: 'active', expiresAt: { $lte: now } });
        else if (status) where.push({ status });
        rows = await pageById(orm.em.fork(), Listing, where, {
          list: 'listings',
          order: 'newest',
          limit,
          cursor,
        });
      }
      return mapPage(rows, async (row) => {
        const listing = rowOfEntity(row);
        return listingView(listing, await decimalsOf(listing), now);
      });
    },

    async cancelListing(actor, id) {
      const listing = await readListing(id);
      await writer.assertControls(actor, [
        { from: listing.sellerWallet, place: { pointer: '/path', label: '' } },
      ]);
      const at = new Date();
      const status = listingStatusOf(listing, at);
      if (status !== 'active') throw new ListingNotActiveError(id, status);
      const closed = closedListing(listing, await decimalsOf(listing), {
        status: 'cancelled',
        reason: null,
        by: actor.userId,
        at,
      });
      const result = await applyWrite(
        store,
        idempotency,
        undefined,
        {
          at,
          guards: [
            { kind: 'listingActive', listingId: id, at },
            controlsWallet(actor.userId, listing.sellerWallet),
          ],
          listingStatuses: [closed.change],
          events: [closed.event],
        },
        { status: 200, body: closed.view, headers: {} },
        (failure) =>
          notActive(id, failure) ??
          (failure.guard.kind === 'controls'
            ? new WalletNotControlledError(listing.sellerWallet)
            : new Error(`Unexpected guard ${failure.guard.kind}.`)),
      );
      return result.body;
    },

    async buy(actor, id, wallet, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'buyListing',
        key: idempotencyKey,
        request: { id, wallet },
      });
      let listing: ListingRow;
      let item: AssetFacts;
      let currency: AssetFacts;
      let settings: MarketSettingsView;
      try {
        listing = await readListing(id);
        const status = listingStatusOf(listing, new Date());
        if (status !== 'active') throw new ListingNotActiveError(id, status);
        await writer.assertControls(actor, [{ from: wallet, place: { pointer: '/body/wallet', label: '' } }]);
        if (wallet === listing.sellerWallet || actor.userId === listing.sellerUserId)
          throw new ConflictError(
            `The listing ${id} is your own: you cannot buy it.`,
            '/problems/own-listing',
          );
        settings = await settingsOf(listing.collectionId);
        if (!settings.tradingEnabled) throw new TradingDisabledError(listing.collectionId);
        item = await writer.factsOf(listing.assetId);
        currency = await writer.factsOf(listing.currencyId);
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const { royaltyWallet, feeWallet, split } = await shares(settings, listing.price);
      const place = { pointer: '/path/listing_id', label: '' };
      const legs: Leg[] = [
        {
          asset: item,
          amount: listing.amount,
          from: listing.sellerWallet,
          to: wallet,
          place,
          by: listing.sellerUserId,
        },
      ];
      const pay = (to: StoredAddress | null | undefined, amount: bigint) => {
        // A share to the buyer itself (a studio buying in its own collection) does not move.
        if (to && amount > 0n && to !== wallet)
          legs.push({
            asset: currency,
            amount,
            from: wallet,
            to,
            place: { pointer: '/body/wallet', label: '' },
          });
      };
      pay(listing.sellerWallet, split.sellerProceeds);
      pay(royaltyWallet, split.royalty);
      pay(feeWallet, split.fee);
      const at = new Date();
      const operationId = newId('op');
      const sale: NewSale = {
        id: operationId,
        listingId: id,
        assetId: item.id,
        collectionId: listing.collectionId,
        amount: listing.amount,
        currencyId: currency.id,
        price: listing.price,
        ...split,
        sellerWallet: listing.sellerWallet,
        buyerWallet: wallet,
        createdAt: at,
      };
      const sold: ListingRow = {
        ...listing,
        status: 'sold',
        closedBy: actor.userId,
        operationId,
        updatedAt: at,
      };
      const decimals = { asset: item.decimals, currency: currency.decimals };
      const soldView = listingView(sold, decimals, at);
      const saleBody = await saleView(sale);
      const events: NewEvent[] = [
        {
          type: 'sale',
          occurredAt: at,
          data: saleBody,
          assetId: item.id,
          collectionId: listing.collectionId,
          wallets: [listing.sellerWallet, wallet],
          fromWallet: listing.sellerWallet,
          toWallet: wallet,
        },
      ];
      const prices = [];
      if (item.kind === 'nft') {
        // An NFT's market price is its last sale (GET /api/v1/price/{id}, source `market`).
        const price = marketPrice(sale, saleBody, currency.decimals, actor.userId);
        prices.push(price.row);
        events.push(price.event);
      }
      // The seller side failing (no longer controls, holds, or may move the item) ends the listing.
      let unavailable = false;
      const sellerSide = (failure: GuardFailure) => {
        const { guard } = failure;
        const seller =
          (guard.kind === 'controls' && guard.wallet === listing.sellerWallet) ||
          (guard.kind === 'holds' && guard.assetId === item.id && guard.wallet === listing.sellerWallet) ||
          (guard.kind === 'movable' && guard.assetId === item.id);
        if (!seller) return undefined;
        unavailable = true;
        return new ListingNotActiveError(id, 'unavailable');
      };
      try {
        return await writer.apply(
          actor,
          legs,
          key,
          at,
          (transfers) => ({
            status: 201,
            body: { id: operationId, sale: saleBody, listing: soldView, transfers },
            headers: {},
          }),
          {
            leading: [{ kind: 'listingActive', listingId: id, at }],
            listingStatuses: [
              { listingId: id, status: 'sold', reason: null, by: actor.userId, operationId, at },
            ],
            sales: [sale],
            prices,
            events,
            operationId,
            refuse: (failure) => notActive(id, failure) ?? sellerSide(failure),
          },
        );
      } catch (error) {
        if (unavailable) await endListing(listing, 'unavailable');
        throw error;
      }
    },

    async listSales({ collection, assetId, limit, cursor }) {
      const where: FilterQuery<Sale>[] = [];
      if (collection) where.push({ collectionId: collection });
      if (assetId) where.push({ assetId });
      const rows = await pageById(orm.em.fork(), Sale, where, {
        list: 'sales',
        order: 'newest',
        limit,
        cursor,
      });
      return mapPage(rows, (row) => saleView(saleOfEntity(row)));
    },

    async collectionStats(collectionId, currency, trait) {
      await collectionOf(collectionId);
      // With a trait, the best offer a holder of such an item can accept: a collection offer or a
      // trait offer for that value.
      const offers: Parameters<typeof bestOffer>[0] = [{ collectionId, assetId: null, traitType: null }];
      if (trait) offers.push({ collectionId, traitType: trait.type, traitValue: trait.value });
      return stats({ collectionId }, currency, offers, async () => {
        const em = orm.em.fork();
        const where = { collectionId, currencyId: currency, ...buyable() };
        const order = { orderBy: [{ price: 'asc' as const }, { id: 'asc' as const }] };
        if (!trait) return (await em.find(Listing, where, { ...order, limit: 1 }))[0] ?? null;
        // The trait floor: the first unexpired row of the active listings with that attribute value,
        // in price order (`listing_trait_floor_index`), then its listing.
        const [row] = await traitFloorQuery(em, collectionId, currency, trait, new Date()).getResultList();
        return row ? em.findOne(Listing, { id: row.listingId }) : null;
      });
    },

    async expireListings(now, limit) {
      const rows = await orm.em
        .fork()
        .find(
          Listing,
          { status: 'active', expiresAt: { $lte: now } },
          { orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }], limit },
        );
      let expired = 0;
      for (const row of rows) {
        const listing = rowOfEntity(row);
        const at = new Date();
        const closed = closedListing(listing, await decimalsOf(listing), {
          status: 'expired',
          reason: null,
          by: null,
          at,
        });
        // No `at`: the guard checks the listing is still active, not its expiry. Bought, cancelled or
        // swept by another instance meanwhile: refused, nothing written (each listing expires once).
        const outcome = await store.apply({
          at,
          guards: [{ kind: 'listingActive', listingId: listing.id }],
          listingStatuses: [closed.change],
          events: [closed.event],
        });
        if (outcome.outcome === 'applied') expired++;
      }
      return expired;
    },

    async assetStats(assetId, currency) {
      const em = orm.em.fork();
      const asset = await em.findOne(Asset, { id: assetId }, { fields: ['collection', 'metadata'] });
      if (!asset) throw new NotFoundError(`No asset with id ${assetId}.`);
      // Its holder can accept its own offers, its collection's, and the trait offers for each of its
      // attribute values (one read each: bounded by its attributes, at most 64, not by the offers).
      const collectionId = asset.collection.id;
      const attributes = (asset.metadata as { attributes?: Attributes } | undefined)?.attributes;
      const offers: Parameters<typeof bestOffer>[0] = [
        { assetId },
        { collectionId, assetId: null, traitType: null },
        ...traitsOf(attributes).map((t) => ({ collectionId, traitType: t.type, traitValue: t.value })),
      ];
      return stats({ assetId }, currency, offers, async () => {
        const [floor] = await em.find(
          Listing,
          { assetId, currencyId: currency, ...buyable() },
          { orderBy: [{ price: 'asc' }, { id: 'asc' }], limit: 1 },
        );
        return floor ?? null;
      });
    },
  };
}

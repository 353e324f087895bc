// What the marketplace's parts share (issue 35): a collection's market settings, a listing read, the
// price's currency, a sale's view, the price split (seller, studio royalty, deployment fee) and a
// sale's market price. The listings (./market-listings.ts), the purchase (./market-purchase.ts), the
// market figures (./market-figures.ts), the offers (./offers.ts) and the auctions (./auctions.ts)
// take it from the market service (./market.ts).

import type { MarketConfig } from '../../config/index.ts';
import type { Database } from '../../db/database.ts';
import { Collection } from '../../db/entities/Collection.ts';
import { CollectionMarket } from '../../db/entities/CollectionMarket.ts';
import type { ListingEndReason } from '../../db/entities/Listing.ts';
import type { Sale } from '../../db/entities/Sale.ts';
import { Wallet } from '../../db/entities/Wallet.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import type { Idempotency } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import type { AssetFacts } from './legs.ts';
import {
  closedListing,
  LISTING_COLUMNS,
  type ListingDecimals,
  type ListingRow,
  listingRowOf,
  type StoredListingRow,
} from './listings.ts';
import { newPriceEvent } from './outbox.ts';
import { MARKET_SOURCE } from './prices.ts';
import type { GuardFailure, LedgerStore, NewSale } from './store/plan.ts';
import type { MarketSettingsView, SaleView } from './views.ts';

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

/** The price split, in base units: royalty and fee rounded down, the seller the rest (exact). */
export function splitPrice(price: bigint, royaltyBps: number, feeBps: number) {
  const fee = (price * BigInt(feeBps)) / BPS;
  const royaltyWanted = (price * BigInt(royaltyBps)) / BPS;
  const royalty = royaltyWanted < price - fee ? royaltyWanted : price - fee;
  return { fee, royalty, sellerProceeds: price - fee - royalty };
}

/** A price as stored for the price history: 18 fractional digits. */
function scaledPrice(price: bigint, decimals: number): bigint {
  return price * 10n ** BigInt(PRICE_DECIMALS - decimals);
}

/** The listings a buyer can buy now: active and not past their expiry. */
export const buyable = () => ({
  status: 'active' as const,
  $or: [{ expiresAt: null }, { expiresAt: { $gt: new Date() } }],
});

/** A `listingActive` guard's failure as its answer: 404 for a listing gone, 409 for one closed. */
export function notActive(id: string, failure: GuardFailure): Error | undefined {
  if (failure.guard.kind !== 'listingActive') return undefined;
  if (failure.reason === 'missing') return listingNotFound(id);
  return new ListingNotActiveError(id, failure.reason ?? 'closed');
}

export function saleOfEntity(sale: Sale): NewSale {
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

export type MarketContext = ReturnType<typeof createMarketContext>;

export function createMarketContext(
  { orm, reads }: Database,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter,
  config: MarketConfig,
) {
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
    const [row] = await reads.all<StoredListingRow>(`select ${LISTING_COLUMNS} from listing where id = ?`, [
      id,
    ]);
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

  return {
    orm,
    reads,
    idempotency,
    store,
    writer,
    config,
    settingsOf,
    collectionOf,
    readListing,
    decimalsOf,
    acceptedCurrency,
    endListing,
    shares,
    saleView,
    marketPrice,
  };
}

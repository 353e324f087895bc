// The market's figures and history (issue 35): the sales history, and a collection's, a trait's or an
// item's figures in one currency: the floor (the cheapest buyable listing), the best open offer, the
// last sale, the 24 h volume and sale count.

import type { FilterQuery } from '@mikro-orm/core';
import { Asset } from '../../db/entities/Asset.ts';
import { Listing } from '../../db/entities/Listing.ts';
import { Offer } from '../../db/entities/Offer.ts';
import { Sale } from '../../db/entities/Sale.ts';
import { NotFoundError } from '../errors.ts';
import { formatAmount } from './amounts.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import { traitFloorQuery } from './listings-by-price.ts';
import { buyable, type MarketContext, saleOfEntity } from './market-context.ts';
import { type Attributes, traitsOf } from './offers.ts';
import type { MarketStatsView, SaleView } from './views.ts';

export interface MarketFigureMethods {
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
}

const DAY_MS = 86_400_000;
/** The most open offers a best offer reads from the top of its index (the expired ones skipped). */
const BEST_OFFER_SCAN = 100;

/** The offers a best offer reads: a collection's collection offers, an item's, one trait value's. */
type OfferScope =
  | { collectionId: string; assetId: null; traitType: null }
  | { assetId: string }
  | { collectionId: string; traitType: string; traitValue: string };

export function createMarketFigureMethods(ctx: MarketContext): MarketFigureMethods {
  const { orm, writer, collectionOf, saleView } = ctx;

  /**
   * The highest open, unexpired offer in `currency` among the scopes (a collection's collection
   * offers; an item's own offers; the trait offers for one attribute value): each read from its
   * price index downwards, first row kept.
   */
  async function bestOffer(scopes: OfferScope[], currency: string): Promise<Offer | null> {
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
    offerScopes: OfferScope[],
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

  return {
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
      const offers: OfferScope[] = [{ collectionId, assetId: null, traitType: null }];
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

    async assetStats(assetId, currency) {
      const em = orm.em.fork();
      const asset = await em.findOne(Asset, { id: assetId }, { fields: ['collection', 'metadata'] });
      if (!asset) throw new NotFoundError(`No asset with id ${assetId}.`);
      // Its holder can accept its own offers, its collection's, and the trait offers for each of its
      // attribute values (one read each: bounded by its attributes, at most 64, not by the offers).
      const collectionId = asset.collection.id;
      const attributes = (asset.metadata as { attributes?: Attributes } | undefined)?.attributes;
      const offers: OfferScope[] = [
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

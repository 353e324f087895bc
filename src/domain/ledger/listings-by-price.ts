// The buyable listings cheapest first (`GET /api/v1/listings?sort=price`, issue 35), paged by a keyset
// cursor over (price, id): a page is the rows after the last (price, id) seen, so a listing bought,
// cancelled or listed between two pages neither repeats nor shifts the others (an offset would).
//
// Price order only means something within one currency (base units of different currencies are not
// comparable), among comparable things (one collection's items, or one item), and only for what can
// be bought now: the read takes one currency, the `active` status, and a collection or an item. Each
// shape walks an index whose leading columns are its equalities and whose next are (price, id), so a
// page costs its rows, not the listings:
//   collection and currency: `listing (collection_id, status, currency_id, price, id)` (the floor's);
//   item and currency:       `listing (asset_id, status, currency_id, price, id)` (with a collection
//                            too, the item's listings, all of its collection or none).
// Every collection's listings of a currency in price order are refused (400): such an index gave
// PostgreSQL, on stale statistics, a way to walk all of a currency's listings for one collection's page.
// The cursor's bound is `price >= p` (an index bound on both databases) and `price > p or id > i`
// checked on the rows: only listings at exactly the cursor's price are read twice. Expired listings
// still `active` (until the keeper ends them) are skipped on the rows.
// The trait floor (the cheapest buyable listing of a collection whose item has one attribute value)
// is one such read too, of `listing_trait (collection_id, trait_type, trait_value, currency_id, price,
// listing_id)`: the active listings' attribute values (src/db/entities/ListingTrait.ts).
// test/integration/economy/market-read-plans.test.ts EXPLAINs these reads (PostgreSQL with stale
// statistics too); test/integration/economy/market-price-order.test.ts pages them over HTTP.

import type { EntityManager, QBFilterQuery, QueryBuilder } from '@mikro-orm/sql';
import { Listing } from '../../db/entities/Listing.ts';
import { ListingTrait } from '../../db/entities/ListingTrait.ts';
import { ValidationError } from '../errors.ts';
import { decodeCursor, isString, type Page, page } from './cursor.ts';

/** A price-ordered read's filters: one currency, and a collection or an item (or both). */
export type PriceOrderFilters = { currency: string; collection?: string; assetId?: string } & (
  | { collection: string }
  | { assetId: string }
);

/** The cursor's key: the last listing's price (base units, decimal) and id. */
type PriceKey = [price: string, id: string];

const isPriceKey = (key: unknown): key is PriceKey =>
  Array.isArray(key) &&
  key.length === 2 &&
  typeof key[0] === 'string' &&
  /^\d{1,78}$/.test(key[0]) &&
  isString(key[1]);

/**
 * The cursor's list: its currency is part of it, so a cursor of newest-first pages, of another
 * currency or of another list is refused (400), not read as a position in this one.
 */
const listOf = (currency: string) => `listings:price:${currency}`;

/** Refuses what price order cannot answer from an index, or does not mean (400, named fields). */
export function checkPriceOrder(query: {
  currency?: string;
  collection?: string;
  assetId?: string;
  seller?: string;
  status?: string;
}): PriceOrderFilters {
  const errors: { pointer: string; detail: string }[] = [];
  if (query.currency === undefined)
    errors.push({ pointer: '/query/currency', detail: 'is required with sort=price' });
  if (query.collection === undefined && query.assetId === undefined)
    errors.push({ pointer: '/query/collection', detail: 'or assetId is required with sort=price' });
  if (query.seller !== undefined)
    errors.push({ pointer: '/query/seller', detail: 'cannot be combined with sort=price' });
  if (query.status !== undefined && query.status !== 'active')
    errors.push({ pointer: '/query/status', detail: 'must be active (or absent) with sort=price' });
  const { currency, collection, assetId } = query;
  if (errors.length || currency === undefined || (collection === undefined && assetId === undefined))
    throw new ValidationError(
      'sort=price lists the buyable listings of one collection or item in one currency: it needs `currency` and `collection` or `assetId`, and takes no `seller` or other status.',
      errors,
    );
  return collection === undefined
    ? { currency, assetId: assetId as string }
    : { currency, collection, ...(assetId === undefined ? {} : { assetId }) };
}

/** The query of one page (`limit + 1` rows) after `after`: what the service runs and the tests EXPLAIN. */
export function priceOrderQuery(
  em: EntityManager,
  filters: PriceOrderFilters,
  after: PriceKey | undefined,
  limit: number,
  now: Date,
): QueryBuilder<Listing> {
  const where: QBFilterQuery<Listing>[] = [
    { status: 'active', currencyId: filters.currency },
    { $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] },
  ];
  // An item's listings are all of its collection: the collection is checked on the rows (listingsByPrice),
  // so the item's index is the one that fits.
  if (filters.assetId !== undefined) where.push({ assetId: filters.assetId });
  else if (filters.collection !== undefined) where.push({ collectionId: filters.collection });
  if (after !== undefined) {
    const price = BigInt(after[0]);
    where.push({ price: { $gte: price } }, { $or: [{ price: { $gt: price } }, { id: { $gt: after[1] } }] });
  }
  return em
    .createQueryBuilder(Listing)
    .select('*')
    .where({ $and: where })
    .orderBy([{ price: 'asc' }, { id: 'asc' }])
    .limit(limit + 1);
}

/**
 * The trait floor's read: the first row of the active listings of the collection whose item has the
 * attribute value, in one currency, unexpired at `now`, in price order (then listing id).
 */
export function traitFloorQuery(
  em: EntityManager,
  collectionId: string,
  currency: string,
  trait: { type: string; value: string },
  now: Date,
): QueryBuilder<ListingTrait> {
  return em
    .createQueryBuilder(ListingTrait)
    .select('*')
    .where({
      collectionId,
      traitType: trait.type,
      traitValue: trait.value,
      currencyId: currency,
      $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }],
    })
    .orderBy([{ price: 'asc' }, { listingId: 'asc' }])
    .limit(1);
}

/** One page of buyable listings cheapest first; a cursor of another list or currency is a 400. */
export async function listingsByPrice(
  em: EntityManager,
  filters: PriceOrderFilters,
  request: { limit: number; cursor: string | undefined },
  now: Date,
): Promise<Page<Listing>> {
  const list = listOf(filters.currency);
  const after = decodeCursor(request.cursor, list, isPriceKey);
  const rows = await priceOrderQuery(em, filters, after, request.limit, now).getResultList();
  const kept = rows.filter(
    (row) => filters.collection === undefined || row.collectionId === filters.collection,
  );
  return page(kept, request.limit, list, (row): PriceKey => [String(row.price), row.id]);
}

// Opaque list cursors: base64url JSON naming the list they belong to and the last sort key seen.
// Lists are keyed on immutable values (ids, addresses, sequence numbers), never offsets, so rows
// written between two pages are neither repeated nor skipped.
import type { EntityManager, EntityName, FilterQuery, OrderDefinition } from '@mikro-orm/core';
import { ValidationError } from '../errors.ts';

export function encodeCursor(list: string, key: unknown): string {
  return Buffer.from(JSON.stringify({ l: list, k: key })).toString('base64url');
}

/** Decodes a cursor of `list`; `isKey` checks the key's shape. Anything else is the client's error. */
export function decodeCursor<K>(
  cursor: string | undefined,
  list: string,
  isKey: (key: unknown) => key is K,
): K | undefined {
  if (cursor === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const { l, k } = (parsed ?? {}) as { l?: unknown; k?: unknown };
  if (l !== list || !isKey(k)) {
    throw new ValidationError('The cursor is malformed or belongs to another list.', [
      { pointer: '/query/cursor', detail: 'is not a cursor of this list' },
    ]);
  }
  return k;
}

export const isString = (key: unknown): key is string =>
  typeof key === 'string' && key.length > 0 && key.length < 100;

export const isInteger = (key: unknown): key is number => Number.isSafeInteger(key);

export const isStringPair = (key: unknown): key is [string, string] =>
  Array.isArray(key) && key.length === 2 && isString(key[0]) && isString(key[1]);

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** One page: `limit` items plus whether more exist (fetch `limit + 1` rows to know). */
export function page<T, K>(rows: T[], limit: number, list: string, keyOf: (row: T) => K): Page<T> {
  const data = rows.slice(0, limit);
  const next_cursor = rows.length > limit ? encodeCursor(list, keyOf(data[data.length - 1])) : null;
  return { data, next_cursor };
}

/** Where an id-keyed list starts: its newest rows (ids descending: ids are time-ordered) or its oldest. */
export type IdOrder = 'newest' | 'oldest';

/**
 * One page of `entity`'s rows that match every filter, keyed by their id (the lists of listings,
 * offers, auctions, sales, trades, recipes, store offers, loot boxes, collections): the cursor
 * names the last id seen, so the next page starts after it in `order`.
 */
export async function pageById<T extends { id: string }>(
  em: EntityManager,
  entity: EntityName<T>,
  filters: FilterQuery<T>[],
  request: { list: string; order: IdOrder; limit: number; cursor: string | undefined },
): Promise<Page<T>> {
  const last = decodeCursor(request.cursor, request.list, isString);
  const newest = request.order === 'newest';
  const where = [...filters];
  // MikroORM cannot see that a generic T's `id` is a column: the one cast of these lists.
  if (last !== undefined)
    where.push({ id: newest ? { $lt: last } : { $gt: last } } as unknown as FilterQuery<T>);
  const rows = await em.find(entity, (where.length ? { $and: where } : {}) as FilterQuery<T>, {
    orderBy: { id: newest ? 'desc' : 'asc' } as OrderDefinition<T>,
    limit: request.limit + 1,
  });
  return page(rows, request.limit, request.list, (row) => row.id);
}

/** A page with each row turned into its view, one after another (views may read). */
export async function mapPage<T, V>(result: Page<T>, view: (row: T) => V | Promise<V>): Promise<Page<V>> {
  const data: V[] = [];
  for (const row of result.data) data.push(await view(row));
  return { data, next_cursor: result.next_cursor };
}

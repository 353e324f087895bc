// Opaque list cursors: base64url JSON naming the list they belong to and the last sort key seen.
// Lists are keyed on immutable values (ids, addresses, sequence numbers), never offsets, so rows
// written between two pages are neither repeated nor skipped.
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

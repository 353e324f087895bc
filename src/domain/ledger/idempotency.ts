// Idempotency-Key support for creating and moving POSTs. A key is scoped to its user and operation.
// The record travels in the write's plan and the store inserts it FIRST in the same transaction as
// the change: a concurrent request with the same key blocks on that unique key (PostgreSQL) or waits
// its turn (SQLite), then finds the committed record and replays its answer, so a change is never
// applied twice. A request that fails rolls its record back with everything else, so a retry after
// an error runs again.
import { createHash } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { IdempotencyRecord } from '../../db/entities/IdempotencyRecord.ts';
import type { Orm } from '../../db/orm.ts';
import { answerOf, type StoredRecord, storedRecordOf } from '../../db/stored-answer.ts';
import { UnprocessableError } from '../errors.ts';
import type { IdempotencyKey, StoredResponse } from './store/plan.ts';

/** A write's answer as the caller gets it: `replayed` when it is the stored answer to an earlier try. */
export type { IdempotencyKey, StoredResponse };

export type WriteResult<T> = StoredResponse<T> & { replayed: boolean };

export interface IdempotencyScope {
  userId: string;
  operation: string;
  /** The client's `Idempotency-Key`; without one the write simply runs. */
  key: string | undefined;
  /** Everything that identifies the request (body and path parameters). */
  request: unknown;
}

export interface Idempotency {
  /**
   * The record of a keyed request, undefined without a key: a ledger plan carries it with the answer
   * it stores (./store/plan.ts), and the store inserts it first in the write's transaction.
   */
  keyOf(scope: IdempotencyScope): IdempotencyKey | undefined;
  /**
   * The stored answer of an unexpired `record` (columns as READ_RECORD selects them) for `key`'s
   * request; IdempotencyKeyReusedError when it answered another request.
   */
  replay<T>(record: StoredRecord, key: IdempotencyKey): StoredResponse<T> & { replayed: true };
  /** An unexpired record of `key`, read outside any transaction (undefined when there is none). */
  find(key: IdempotencyKey): Promise<StoredRecord | undefined>;
}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export class IdempotencyKeyReusedError extends UnprocessableError {
  constructor() {
    super('This Idempotency-Key was used with a different request body.', '/problems/idempotency-key-reused');
  }
}

// Every idempotent write reads and writes its record: raw statements, no entities.
const READ_RECORD =
  'select request_hash, status, response_body, response_deflated, response_headers, expires_at from idempotency_record where id = ?';

export function createIdempotency({ reads }: Database, ttlSeconds: number): Idempotency {
  function keyOf(scope: IdempotencyScope): IdempotencyKey | undefined {
    if (scope.key === undefined) return undefined;
    return {
      id: `${scope.userId}:${scope.operation}:${scope.key}`,
      requestHash: createHash('sha256').update(canonicalJson(scope.request)).digest('base64url'),
      expiresAt: (now) => new Date(now.getTime() + ttlSeconds * 1000),
    };
  }

  function replayOf<T>(record: StoredRecord, requestHash: string): StoredResponse<T> & { replayed: true } {
    if (record.request_hash !== requestHash) throw new IdempotencyKeyReusedError();
    return {
      status: record.status,
      body: answerOf(record, reads.json) as T,
      headers: (reads.json(record.response_headers) as Record<string, string> | null) ?? {},
      replayed: true,
    };
  }

  return {
    keyOf,
    replay: (record, key) => replayOf(record, key.requestHash),
    async find(key) {
      const [row] = await reads.all<Record<string, unknown> & { expires_at: unknown }>(READ_RECORD, [key.id]);
      if (!row || reads.date(row.expires_at).getTime() <= Date.now()) return undefined;
      return storedRecordOf(row);
    },
  };
}

/** Expired records removed per statement: short transactions beside the writers. */
const EXPIRED_BATCH = 1000;

/**
 * Deletes the records that expired at or before `now`, `batch` at a time (oldest expiry first,
 * on the `expires_at` index); returns how many. Without it they stayed for ever: a write only replaces
 * an expired record of its own key, so every keyed write left ~0.5 KB per event behind (issue 34). A
 * write racing the sweep is safe either way: an expired record replays nothing, and its key's next
 * write inserts a new one whether or not the old one is still there.
 */
export async function deleteExpiredIdempotencyRecords(
  orm: Orm,
  now = new Date(),
  batch = EXPIRED_BATCH,
): Promise<number> {
  // Through the entity: the ORM writes the Date as each database stores the column.
  const em = orm.em.fork();
  let removed = 0;
  for (;;) {
    const expired = await em.find(
      IdempotencyRecord,
      { expiresAt: { $lte: now } },
      { fields: ['id'], orderBy: { expiresAt: 'asc' }, limit: batch },
    );
    if (expired.length === 0) return removed;
    await em.nativeDelete(IdempotencyRecord, {
      id: { $in: expired.map((record) => record.id) },
      expiresAt: { $lte: now },
    });
    em.clear();
    removed += expired.length;
    if (expired.length < batch) return removed;
  }
}

// Idempotency-Key support for creating and moving POSTs. A key is scoped to its user and operation.
// The record is inserted FIRST in the same transaction as the change: a concurrent request with the
// same key blocks on that unique key (PostgreSQL) or waits its turn (SQLite), then fails to insert
// and replays the committed answer, so a change is never applied twice. A request that fails rolls
// its record back with everything else, so a retry after an error runs again.
import { createHash } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { IdempotencyRecord } from '../../db/entities/IdempotencyRecord.ts';
import type { Orm } from '../../db/orm.ts';
import { UnprocessableError } from '../errors.ts';
import { inTransaction } from './transactions.ts';

/** A write's answer, stored for replay. */
export interface StoredResponse<T> {
  status: number;
  body: T;
  headers: Record<string, string>;
}

/** A write's answer as the caller gets it: `replayed` when it is the stored answer to an earlier try. */
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
  /** Runs `work` in a transaction once per key; a retry gets the first answer, `replayed` set. */
  run<T>(
    scope: IdempotencyScope,
    work: (em: EntityManager) => Promise<StoredResponse<T>>,
  ): Promise<WriteResult<T>>;
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

export function createIdempotency(orm: Orm, ttlSeconds: number): Idempotency {
  /** The stored answer for `id`; `expired` when only an expired record holds the key. */
  async function replay<T>(
    id: string,
    requestHash: string,
  ): Promise<(StoredResponse<T> & { replayed: true }) | 'expired' | null> {
    const record = await orm.em.fork().findOne(IdempotencyRecord, { id });
    if (!record) return null;
    if (record.expiresAt.getTime() <= Date.now()) return 'expired';
    if (record.requestHash !== requestHash) throw new IdempotencyKeyReusedError();
    return {
      status: record.status,
      body: record.responseBody as T,
      headers: record.responseHeaders ?? {},
      replayed: true,
    };
  }

  return {
    async run(scope, work) {
      if (scope.key === undefined) return { ...(await inTransaction(orm, work)), replayed: false };
      const id = `${scope.userId}:${scope.operation}:${scope.key}`;
      const requestHash = createHash('sha256').update(canonicalJson(scope.request)).digest('base64url');
      const earlier = await replay<never>(id, requestHash);
      if (earlier && earlier !== 'expired') return earlier;
      try {
        const result = await inTransaction(orm, async (em) => {
          const now = new Date();
          // An expired record no longer protects anything; make room for the new one. (A record
          // written since the read above makes the insert fail, as a concurrent first try does.)
          if (earlier === 'expired')
            await em.nativeDelete(IdempotencyRecord, { id, expiresAt: { $lte: now } });
          await em.insert(IdempotencyRecord, {
            id,
            requestHash,
            status: 0,
            responseBody: {},
            responseHeaders: null,
            createdAt: now,
            expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
          });
          const response = await work(em);
          await em.nativeUpdate(
            IdempotencyRecord,
            { id },
            { status: response.status, responseBody: response.body, responseHeaders: response.headers },
          );
          return response;
        });
        return { ...result, replayed: false };
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) {
          // Either a concurrent request with this key committed first (replay it), or the change
          // itself hit a unique constraint (the caller maps that).
          const winner = await replay(id, requestHash);
          if (winner && winner !== 'expired') return winner as never;
        }
        throw error;
      }
    },
  };
}

// Idempotency-Key support for creating and moving POSTs. A key is scoped to its user and operation.
// The record is inserted FIRST in the same transaction as the change: a concurrent request with the
// same key blocks on that unique key (PostgreSQL) or waits its turn (SQLite), then fails to insert
// and replays the committed answer, so a change is never applied twice. A request that fails rolls
// its record back with everything else, so a retry after an error runs again.
import { createHash } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import type { Orm } from '../../db/orm.ts';
import { type Row, readStatements } from '../../db/read-statements.ts';
import { writeStatements } from '../../db/write-statements.ts';
import { UnprocessableError } from '../errors.ts';
import type { IdempotencyKey, StoredResponse } from './store/plan.ts';
import { inTransaction } from './transactions.ts';

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
  /** Runs `work` in a transaction once per key; a retry gets the first answer, `replayed` set. */
  run<T>(
    scope: IdempotencyScope,
    work: (em: EntityManager) => Promise<StoredResponse<T>>,
  ): Promise<WriteResult<T>>;
  /**
   * For writes that handle their record themselves (transfers, in one statement or one synchronous
   * transaction): the record of a keyed request, undefined without a key. Same rules as `run`.
   */
  keyOf(scope: IdempotencyScope): IdempotencyKey | undefined;
  /**
   * The stored answer of an unexpired `record` (columns as READ_RECORD selects them) for `key`'s
   * request; IdempotencyKeyReusedError when it answered another request.
   */
  replay<T>(record: Row, key: IdempotencyKey): StoredResponse<T> & { replayed: true };
  /** An unexpired record of `key`, read outside any transaction (undefined when there is none). */
  find(key: IdempotencyKey): Promise<Row | undefined>;
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

/**
 * A duplicate key: MikroORM's exception, or the driver's error from a raw statement (PostgreSQL
 * SQLSTATE 23505; better-sqlite3's SQLITE_CONSTRAINT_PRIMARYKEY / _UNIQUE).
 */
function isUniqueViolation(error: unknown): boolean {
  if (error instanceof UniqueConstraintViolationException) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

// Every idempotent write reads and writes its record: raw statements, no entities.
const READ_RECORD =
  'select request_hash, status, response_body, response_headers, expires_at from idempotency_record where id = ?';
const INSERT_RECORD =
  'insert into idempotency_record (id, request_hash, status, response_body, response_headers, created_at, expires_at) ' +
  "values (?, ?, 0, '{}', null, ?, ?)";
const DELETE_EXPIRED = 'delete from idempotency_record where id = ? and expires_at <= ?';
const STORE_RESPONSE =
  'update idempotency_record set status = ?, response_body = ?, response_headers = ? where id = ?';

export function createIdempotency(orm: Orm, ttlSeconds: number): Idempotency {
  const reads = readStatements(orm);
  const writes = writeStatements(orm);

  function keyOf(scope: IdempotencyScope): IdempotencyKey | undefined {
    if (scope.key === undefined) return undefined;
    return {
      id: `${scope.userId}:${scope.operation}:${scope.key}`,
      requestHash: createHash('sha256').update(canonicalJson(scope.request)).digest('base64url'),
      expiresAt: (now) => new Date(now.getTime() + ttlSeconds * 1000),
    };
  }

  function replayOf<T>(record: Row, requestHash: string): StoredResponse<T> & { replayed: true } {
    if (record.request_hash !== requestHash) throw new IdempotencyKeyReusedError();
    return {
      status: Number(record.status),
      body: reads.json(record.response_body) as T,
      headers: (reads.json(record.response_headers) as Record<string, string> | null) ?? {},
      replayed: true,
    };
  }

  /** The stored answer for `id`; `expired` when only an expired record holds the key. */
  async function replay<T>(
    id: string,
    requestHash: string,
  ): Promise<(StoredResponse<T> & { replayed: true }) | 'expired' | null> {
    const [record] = await reads.all(READ_RECORD, [id]);
    if (!record) return null;
    if (reads.date(record.expires_at).getTime() <= Date.now()) return 'expired';
    return replayOf<T>(record, requestHash);
  }

  return {
    keyOf,
    replay: (record, key) => replayOf(record, key.requestHash),
    async find(key) {
      const [record] = await reads.all(READ_RECORD, [key.id]);
      if (!record || reads.date(record.expires_at).getTime() <= Date.now()) return undefined;
      return record;
    },
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
          if (earlier === 'expired') await writes.run(em, DELETE_EXPIRED, [id, now]);
          await writes.run(em, INSERT_RECORD, [
            id,
            requestHash,
            now,
            new Date(now.getTime() + ttlSeconds * 1000),
          ]);
          const response = await work(em);
          await writes.run(em, STORE_RESPONSE, [
            response.status,
            JSON.stringify(response.body),
            JSON.stringify(response.headers),
            id,
          ]);
          return response;
        });
        return { ...result, replayed: false };
      } catch (error) {
        if (isUniqueViolation(error)) {
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

// The one way to run a transaction outside the stores: `inTransaction` (a fresh EntityManager, the
// transaction retried when the database chose it as a victim), rows read for writing back with
// `forUpdate` (a row lock where the database takes them: ./dialect.ts). PostgreSQL writers take row
// locks and may be chosen as a deadlock victim (or fail serialization); such a transaction changed
// nothing, so it is simply run again, a bounded number of times. SQLite runs one writing transaction
// at a time per process. Ledger writes are plans a ledger store applies
// (src/domain/ledger/store/); the PostgreSQL store retries its one statement with `retrying` too.
import {
  DeadlockException,
  type FlushMode,
  IsolationLevel,
  type LockMode,
  LockWaitTimeoutException,
} from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { dialectOf } from './dialect.ts';
import type { Orm } from './orm.ts';
import { databaseKindOf } from './platform.ts';

/** Attempts of a transaction the database chose as a victim. */
export const TRANSACTION_ATTEMPTS = 5;

/**
 * PostgreSQL SQLSTATEs of a transaction that failed without changing anything: serialization
 * failure, deadlock victim, lock not available. Errors of raw statements (query builder,
 * `em.execute`) reach us unconverted, so the codes are checked as well as MikroORM's classes.
 */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '55P03']);

export function isTransient(error: unknown): boolean {
  if (error instanceof DeadlockException || error instanceof LockWaitTimeoutException) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || TRANSIENT_SQLSTATES.has(code));
}

/**
 * Runs `work` until it succeeds, fails with an error `retryable` does not accept, or has run
 * `attempts` times; a little random back-off between attempts so that the same transactions do not
 * collide again in lock step.
 */
export async function retrying<T>(
  work: () => Promise<T>,
  retryable: (error: unknown) => boolean = isTransient,
  attempts = TRANSACTION_ATTEMPTS,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || !retryable(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}

/**
 * Runs `work` in a fresh transaction (its own identity map), retrying deadlocks and busy errors.
 * `flushMode`: the fork's (FlushMode.COMMIT: no automatic flush before a query).
 */
export function inTransaction<T>(
  orm: Orm,
  work: (em: EntityManager) => Promise<T>,
  options: { flushMode?: FlushMode } = {},
): Promise<T> {
  return retrying(() => orm.em.fork(options).transactional((em) => work(em)));
}

/** Options for a read that the transaction will write back: a row lock on PostgreSQL, none on SQLite. */
export function forUpdate(source: Orm | EntityManager): { lockMode?: LockMode.PESSIMISTIC_WRITE } {
  return dialectOf(source).rowLock;
}

/**
 * Runs the reads of `work` in one snapshot: a read-only REPEATABLE READ transaction on PostgreSQL (so
 * a long read in pages sees one state), a transaction on SQLite (which reads one snapshot anyway).
 */
export function inSnapshot<T>(orm: Orm, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const options =
    databaseKindOf(orm.em.getPlatform()) === 'postgresql'
      ? { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true }
      : {};
  return orm.em.fork().transactional((em) => work(em), options);
}

// Every ledger write runs in one database transaction. PostgreSQL writers take row locks and may be
// chosen as a deadlock victim (or fail serialization); such a transaction changed nothing, so it is
// simply run again, a bounded number of times. SQLite runs one transaction at a time per process.
import { DeadlockException, LockMode, LockWaitTimeoutException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import type { Orm } from '../../db/orm.ts';
import { databaseKindOf } from '../../db/platform.ts';

const MAX_ATTEMPTS = 5;

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
 * Runs `work` in a fresh transaction (its own identity map), retrying deadlocks and busy errors.
 * Not for ledger writes: those are plans a ledger store applies (./store/).
 */
export async function inTransaction<T>(orm: Orm, work: (em: EntityManager) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await orm.em.fork().transactional((em) => work(em));
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isTransient(error)) throw error;
      // A little random back-off so the same transactions do not collide again in lock step.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}

/** Options for a read that the transaction will write back: a row lock on PostgreSQL, none on SQLite. */
export function forUpdate(source: Orm | EntityManager): { lockMode?: LockMode.PESSIMISTIC_WRITE } {
  const platform = 'em' in source ? source.em.getPlatform() : source.getPlatform();
  return databaseKindOf(platform) === 'postgresql' ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {};
}

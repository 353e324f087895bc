// Commit order of event ids on PostgreSQL without serializing writers.
//
// Event ids come from a sequence at INSERT time, but transactions commit in any order, so a reader
// that has seen id 8 cannot tell whether a missing 7 is still in flight (it will appear) or was
// rolled back (it never will). Every event writer holds a SHARED transaction-level advisory lock
// from just before its insert (before it draws its id) until it commits: writers never wait for
// each other. When the relay sees a gap, it takes the same lock EXCLUSIVELY for an instant. That
// waits exactly for the writers in flight at that moment; any id below the largest id already seen
// was drawn by one of them, so afterwards every such id is final: committed, or gone for good.
// SQLite has a single writer: its ids are always visible in commit order and none of this applies.
import type { EntityManager } from '@mikro-orm/sql';
import type { Orm } from '../db/orm.ts';
import { databaseKindOf } from '../db/platform.ts';
import type { RelayConnection } from './relay-connection.ts';

/** The advisory lock's key; writers inside database functions (gats_apply_plan) get it as an argument. */
export const OUTBOX_LOCK_KEY = 4_242_001;

/** Transactions (their driver-level context) that already hold the writer lock. */
const holding = new WeakSet<object>();

/** The transaction `em` runs in (a new object per transaction and per savepoint). */
function transactionOf(em: EntityManager): object | undefined {
  return em.getTransactionContext() as object | undefined;
}

/** Called by event writers, inside their transaction, right before inserting the event row. */
export async function holdOutboxWriterLock(em: EntityManager): Promise<void> {
  if (databaseKindOf(em.getPlatform()) !== 'postgresql') return;
  const transaction = transactionOf(em);
  if (transaction && holding.has(transaction)) return;
  await em.execute('select pg_advisory_xact_lock_shared(?)', [OUTBOX_LOCK_KEY]);
  if (transaction) holding.add(transaction);
}

/**
 * PostgreSQL: a common table expression, `outbox_writer`, that takes the writer lock. A writer that
 * runs a statement before its event insert can take the lock in it (one round trip fewer): put
 * this in the statement's WITH, join `outbox_writer` to the rows it reads (so that any row coming
 * back means the lock is held), and when rows come back call `noteOutboxWriterLockHeld` so that
 * the event insert does not ask again.
 */
export const OUTBOX_WRITER_LOCK_CTE = `outbox_writer as materialized (select pg_advisory_xact_lock_shared(${OUTBOX_LOCK_KEY}) as held)`;

/** Records that `em`'s transaction holds the writer lock (taken through OUTBOX_WRITER_LOCK_CTE). */
export function noteOutboxWriterLockHeld(em: EntityManager): void {
  const transaction = transactionOf(em);
  if (transaction) holding.add(transaction);
}

/** Resolves once every event writer in flight now has committed or rolled back. */
export async function waitForOutboxWriters(orm: Orm): Promise<void> {
  if (databaseKindOf(orm.em.getPlatform()) !== 'postgresql') return;
  await orm.em.fork().transactional(async (em) => {
    await em.execute('select pg_advisory_xact_lock(?)', [OUTBOX_LOCK_KEY]);
  });
}

/**
 * The same on the relay's own connection, in one statement whose lock is released as it ends. With
 * `wait` false, does not wait (nor hold up new writers): true when no writer is in flight now.
 */
export async function waitForOutboxWritersOn(relay: RelayConnection, wait: boolean): Promise<boolean> {
  if (wait) {
    // As long as the longest transaction in flight; past that the relay retries on a new connection.
    await relay.query('select pg_advisory_xact_lock($1)', [OUTBOX_LOCK_KEY], undefined, 120_000);
    return true;
  }
  const [row] = await relay.query<{ free: boolean }>('select pg_try_advisory_xact_lock($1) as free', [
    OUTBOX_LOCK_KEY,
  ]);
  return row?.free === true;
}

/** Whether ids can appear out of order (then a gap must be settled before it is skipped). */
export function idsMayCommitOutOfOrder(orm: Orm): boolean {
  return databaseKindOf(orm.em.getPlatform()) === 'postgresql';
}

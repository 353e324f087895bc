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

const OUTBOX_LOCK_KEY = 4_242_001;

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
 * Runs `select` (one SELECT statement, `?` placeholders) in `em`'s transaction and, on PostgreSQL,
 * takes the writer lock in the same statement: one round trip fewer for a writer that reads
 * something before it writes its event (its event insert then finds the lock held). The lock is
 * held, to the end of the transaction as usual, whenever a row is returned; a writer that finds no
 * row and still writes an event gets the lock from `holdOutboxWriterLock` as usual.
 */
export async function selectHoldingOutboxWriterLock<R extends object>(
  em: EntityManager,
  select: string,
  parameters: readonly unknown[],
): Promise<R[]> {
  if (databaseKindOf(em.getPlatform()) !== 'postgresql') return em.execute<R[]>(select, [...parameters]);
  const transaction = transactionOf(em);
  const rows = await em.execute<R[]>(
    `with outbox_writer as materialized (select pg_advisory_xact_lock_shared(?) as held) select found.* from outbox_writer cross join lateral (${select}) as found`,
    [OUTBOX_LOCK_KEY, ...parameters],
  );
  if (transaction && rows.length > 0) holding.add(transaction);
  return rows;
}

/** Resolves once every event writer in flight now has committed or rolled back. */
export async function waitForOutboxWriters(orm: Orm): Promise<void> {
  if (databaseKindOf(orm.em.getPlatform()) !== 'postgresql') return;
  await orm.em.fork().transactional(async (em) => {
    await em.execute('select pg_advisory_xact_lock(?)', [OUTBOX_LOCK_KEY]);
  });
}

/** The same wait, on the relay's own connection: one statement, its lock released as it ends. */
export async function waitForOutboxWritersOn(relay: RelayConnection): Promise<void> {
  await relay.query('select pg_advisory_xact_lock($1)', [OUTBOX_LOCK_KEY]);
}

/** Whether ids can appear out of order (then a gap must be settled before it is skipped). */
export function idsMayCommitOutOfOrder(orm: Orm): boolean {
  return databaseKindOf(orm.em.getPlatform()) === 'postgresql';
}

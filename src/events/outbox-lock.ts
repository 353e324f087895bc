// Commit order of event ids on PostgreSQL without serializing writers.
//
// Event ids come from a sequence at INSERT time, but transactions commit in any order, so a reader
// that has seen id 8 cannot tell whether a missing 7 is still in flight (it will appear) or was
// rolled back (it never will). Every event writer (on PostgreSQL: gats_apply_plan, the ledger
// store's one statement, src/db/functions/gats_apply_plan.sql) holds a SHARED transaction-level
// advisory lock from just before its insert (before it draws its id) until it commits: writers
// never wait for each other. When the relay sees a gap, it takes the same lock EXCLUSIVELY for an instant. That
// waits exactly for the writers in flight at that moment; any id below the largest id already seen
// was drawn by one of them, so afterwards every such id is final: committed, or gone for good.
// SQLite has a single writer: its ids are always visible in commit order and none of this applies.
import { dialectOf } from '../db/dialect.ts';
import type { Orm } from '../db/orm.ts';
import type { RelayConnection } from './relay-connection.ts';

/** The advisory lock's key; writers inside database functions (gats_apply_plan) get it as an argument. */
export const OUTBOX_LOCK_KEY = 4_242_001;

/**
 * Resolves once every event writer in flight now has committed or rolled back: takes the lock
 * exclusively on the relay's own connection, in one statement whose lock is released as it ends.
 * With `wait` false, does not wait (nor hold up new writers): true when no writer is in flight now.
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
  return dialectOf(orm).idsMayCommitOutOfOrder;
}

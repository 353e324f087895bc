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

const OUTBOX_LOCK_KEY = 4_242_001;

/** Called by event writers, inside their transaction, right before inserting the event row. */
export async function holdOutboxWriterLock(em: EntityManager): Promise<void> {
  if (databaseKindOf(em.getPlatform()) === 'postgresql') {
    await em.execute('select pg_advisory_xact_lock_shared(?)', [OUTBOX_LOCK_KEY]);
  }
}

/** Resolves once every event writer in flight now has committed or rolled back. */
export async function waitForOutboxWriters(orm: Orm): Promise<void> {
  if (databaseKindOf(orm.em.getPlatform()) !== 'postgresql') return;
  await orm.em.fork().transactional(async (em) => {
    await em.execute('select pg_advisory_xact_lock(?)', [OUTBOX_LOCK_KEY]);
  });
}

/** Whether ids can appear out of order (then a gap must be settled before it is skipped). */
export function idsMayCommitOutOfOrder(orm: Orm): boolean {
  return databaseKindOf(orm.em.getPlatform()) === 'postgresql';
}

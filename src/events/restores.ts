// Event ids across a restore from a backup (issue 32.4). A restored database gives out event ids
// again from where the backup was taken, ids that clients already received for events the restore
// undid: a client resuming from one was told `not_yet`, then, once new events reached its id, was
// resumed silently onto a different history. The event id sequence must never go backwards, so
// `npm run db:restored` (run on the restored database before the service starts on it) moves the
// next event id past every id published before the restore, and records the skipped range. A client
// resuming from an id in that range is told to resync (`resync_required` with reason `pruned` on
// WebSocket, 410 `/problems/resync-required` on REST): the events after its id no longer exist.
//
// "Past every id published before": the next id becomes the restore's time in microseconds since
// 1970 (about 1.8e15 in 2026, below 2^53 until 2255), unless the database already gave out more.
// Ids before the first restore started at 1; after a restore they grow by one per event from the
// restore's time in microseconds, so any id published before a restore at time t is below
// t × 1,000,000 as long as the service published fewer than a million events a second on average
// since the previous restore: it publishes thousands at most. Restoring the same backup twice,
// each restore gets a later time, so their ids never meet.
import { dialectOf } from '../db/dialect.ts';
import type { Orm } from '../db/orm.ts';
import { keepOutboxPartitionsAhead } from '../db/outbox-partitions.ts';

/** sequence_counter rows `outbox-restored-after:<last id kept>` = the first id given after it. */
export const RESTORE_MARK_PREFIX = 'outbox-restored-after:';

/** Ids after `after` and before `next` were skipped by a restore: none is, or ever will be, an event. */
export interface RestoreGap {
  after: number;
  next: number;
}

export function restoreGapsOf(rows: { name: string; value: number | string }[]): RestoreGap[] {
  return rows
    .filter((row) => row.name.startsWith(RESTORE_MARK_PREFIX))
    .map((row) => ({ after: Number(row.name.slice(RESTORE_MARK_PREFIX.length)), next: Number(row.value) }))
    .sort((a, b) => a.after - b.after);
}

/** The restore gap `id` falls in (skipped, or published before the restore and undone), or null. */
export function restoreGapHolding(id: number, gaps: readonly RestoreGap[]): RestoreGap | null {
  return gaps.find((gap) => id > gap.after && id < gap.next) ?? null;
}

/** How many ids from `from` (exclusive) to `to` (inclusive) restores skipped. */
export function skippedBetween(from: number, to: number, gaps: readonly RestoreGap[]): number {
  let skipped = 0;
  for (const gap of gaps) {
    const first = Math.max(gap.after + 1, from + 1);
    const last = Math.min(gap.next - 1, to);
    if (last >= first) skipped += last - first + 1;
  }
  return skipped;
}

/** The last event id the database gave out (its sequence, which may pass the newest stored event). */
async function lastIdGiven(orm: Orm): Promise<number> {
  const connection = orm.em.getConnection();
  const [stored] = await connection.execute<{ newest: number | string | null }[]>(
    'select max(id) as newest from outbox_event',
  );
  const sequence = await connection.execute<{ value: string | number }[]>(dialectOf(orm).outboxSequenceSql);
  return Math.max(Number(stored?.newest ?? 0), Number(sequence[0]?.value ?? 0));
}

/**
 * Marks the database as restored: the next event id moves past every id published before (see
 * above) and the skipped range is recorded. Run with no instance serving this database.
 */
export async function markRestored(orm: Orm, now = new Date()): Promise<RestoreGap> {
  const after = await lastIdGiven(orm);
  const next = Math.max(after + 1, now.getTime() * 1000);
  const connection = orm.em.getConnection();
  await connection.transactional(async (transaction) => {
    const run = (sql: string, values: unknown[] = []) => connection.execute(sql, values, 'run', transaction);
    await dialectOf(orm).setOutboxSequence(run, next - 1);
    await run('insert into sequence_counter (name, value) values (?, ?)', [
      `${RESTORE_MARK_PREFIX}${after}`,
      next,
    ]);
  });
  // PostgreSQL: the partitions of the ids from `next` on, before the service gives them.
  if (dialectOf(orm).partitionedOutbox)
    await orm.em
      .fork()
      .transactional((em) =>
        keepOutboxPartitionsAhead((sql, values = []) =>
          em.getConnection().execute(sql, values, 'all', em.getTransactionContext()),
        ),
      );
  return { after, next };
}

// The outbox's range partitions on PostgreSQL (issue 34; docs/architecture/events.md, "The log at
// scale"). `outbox_event` is partitioned by range of id (Migration20261129170000_outbox_partitions):
// `outbox_event_p0` holds the log as it was at the migration, `outbox_event_p<first id>` each a
// fixed-size range of ids after it.
//
// The keeper (`keepOutboxPartitionsAhead`) creates the ranges ahead of the ids: at start-up, every
// `KEEP_EVERY_MS` and after a restore moved the ids (src/events/restores.ts), so that the next
// `AHEAD` partitions' worth of ids (2,000,000 by default: 6,600 events a second for 5 minutes) have
// their partition before they are given. There is no default partition: with one, PostgreSQL cannot
// read the partitions in id order one after the other (an ordered Append) and starts every
// partition's scan to merge them. So an id past the partitions would fail its write: the keeper's
// margin is what prevents it, and its failures are logged (`outbox partitions`); ids given past the
// ranges (the sequence moved by hand) make it start above the last id given.
//
// Retention (`dropOldOutboxPartitions`) drops a partition when every id of its range has been given
// and its newest event is older than the window: a catalog change and the partition's files, not a
// delete of its rows. The rest (in the partition holding the window's boundary) goes by row deletes in batches of the primary key (src/events/store.ts, `prune`).
//
// Locks: attaching a partition takes SHARE UPDATE EXCLUSIVE on `outbox_event` (no conflict with
// reads, writes or a backup's dump), dropping one takes ACCESS EXCLUSIVE on `outbox_event` for the
// moment of the catalog change.
// Each waits at most `LOCK_TIMEOUT` (then fails, and the next pass tries again) so that a long read
// of the log (a backup) never queues every writer behind the keeper.

/** Runs one statement with `?` placeholders in the caller's transaction; returns its rows. */
export type Rows = (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;

/** Ids per partition unless the `sequence_counter` row `outbox-partition-ids` says otherwise. */
export const OUTBOX_PARTITION_IDS = 1_000_000;
/** The row of sequence_counter an operator may set to change the size of partitions created from then on. */
export const PARTITION_IDS_ROW = 'outbox-partition-ids';
/** How many partitions' worth of ids the keeper keeps ahead of the last id given. */
export const AHEAD = 2;
/** How often each instance's keeper runs (besides start-up). */
export const KEEP_EVERY_MS = 5 * 60 * 1000;
/** How long the keeper and retention wait for a lock on the outbox before giving up until the next pass. */
export const LOCK_TIMEOUT = '2s';
/** The advisory lock serializing keepers and retention passes of several instances. */
const PARTITIONS_LOCK_KEY = 4_242_034;

/** A range partition: ids `from` (null: MINVALUE) up to `to`, exclusive. */
export interface OutboxPartition {
  name: string;
  from: number | null;
  to: number;
}

const BOUND = /FROM \((?:'?)(MINVALUE|-?\d+)(?:'?)\) TO \((?:'?)(-?\d+)(?:'?)\)/i;

/** The range partitions of the outbox in id order. */
export async function outboxPartitions(rows: Rows): Promise<OutboxPartition[]> {
  const children = await rows(
    `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound from pg_inherits i
     join pg_class c on c.oid = i.inhrelid where i.inhparent = 'outbox_event'::regclass`,
  );
  const ranges: OutboxPartition[] = [];
  for (const child of children) {
    const bound = String(child.bound);
    const match = BOUND.exec(bound);
    if (!match) throw new Error(`outbox partition ${child.name}: unexpected bound ${bound}`);
    ranges.push({
      name: String(child.name),
      from: /^MINVALUE$/i.test(match[1]) ? null : Number(match[1]),
      to: Number(match[2]),
    });
  }
  ranges.sort((a, b) => a.to - b.to);
  return ranges;
}

/** The last id the outbox's sequence gave (0: none). */
async function lastIdGiven(rows: Rows): Promise<number> {
  const [row] = await rows(
    'select case when is_called then last_value else 0 end as value from outbox_event_id_seq',
  );
  return Number(row?.value ?? 0);
}

async function lockForPartitions(rows: Rows): Promise<void> {
  await rows(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
  await rows('select pg_advisory_xact_lock(?)', [PARTITIONS_LOCK_KEY]);
}

/**
 * Creates the partitions that are missing ahead of the last id given, in the caller's transaction;
 * returns their names. A pass creates at most `AHEAD` + 1 partitions.
 */
export async function keepOutboxPartitionsAhead(rows: Rows): Promise<string[]> {
  await lockForPartitions(rows);
  const [setting] = await rows('select value from sequence_counter where name = ?', [PARTITION_IDS_ROW]);
  const width = Number(setting?.value ?? OUTBOX_PARTITION_IDS);
  if (!Number.isSafeInteger(width) || width < 1)
    throw new Error(`${PARTITION_IDS_ROW} must be a positive integer`);
  const ranges = await outboxPartitions(rows);
  const last = await lastIdGiven(rows);
  const top = ranges.at(-1)?.to ?? 1;
  // Ids given past the ranges (the sequence moved by hand) were never stored: start above them.
  let from = top > last ? top : last + 1;
  const created: string[] = [];
  while (from <= last + AHEAD * width) {
    const name = `outbox_event_p${from}`;
    await rows(`create table "${name}" (like "outbox_event")`);
    await rows(
      `alter table "outbox_event" attach partition "${name}" for values from (${from}) to (${from + width})`,
    );
    created.push(name);
    from += width;
  }
  return created;
}

/**
 * Drops the oldest partition if it is wholly past retention: every id of its range given, its newest
 * event older than `olderThan`. In the caller's transaction, one partition (so the outbox's lock is
 * held for one catalog change); returns the events it held and its last id, or null when the oldest
 * partition must stay.
 */
export async function dropOldestOutboxPartition(
  rows: Rows,
  olderThan: Date,
): Promise<{ removed: number; through: number } | null> {
  await lockForPartitions(rows);
  const ranges = await outboxPartitions(rows);
  const oldest = ranges[0];
  // The newest partition stays (the keeper goes on from its end).
  if (!oldest || ranges.length < 2 || oldest.to - 1 > (await lastIdGiven(rows))) return null;
  const [newest] = await rows(`select occurred_at from "${oldest.name}" order by id desc limit 1`);
  if (newest && new Date(newest.occurred_at as string | Date) >= olderThan) return null;
  const [count] = await rows(`select count(*) as count from "${oldest.name}"`);
  await rows(`drop table "${oldest.name}"`);
  return { removed: Number(count?.count ?? 0), through: oldest.to - 1 };
}

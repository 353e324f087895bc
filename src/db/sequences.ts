import type { EntityManager } from '@mikro-orm/sql';
import { databaseKindOf } from './platform.ts';
import type { SqliteWriter } from './write-statements.ts';

/** The counters in use; each backs the `seq` column of one table. */
export type SequenceName = 'asset' | 'transfer';

const NEXT_COUNTER_VALUE = `insert into sequence_counter (name, value) values (?, 1)
     on conflict (name) do update set value = sequence_counter.value + 1
     returning value`;

/**
 * Takes the next value of a named counter (1, 2, 3, ...) inside the caller's transaction.
 *
 * Assets are listed oldest first with a cursor (`seq > last`), so their values must become visible
 * in increasing order: a row that committed late below the cursor would be skipped for good. The
 * counter row gives that: the upsert below locks it until the transaction ends, so values become
 * visible in increasing order on both databases, and a rolled-back transaction gives its value back.
 * The price is that writers of one counter serialize from this call to their commit: call it as late
 * as possible in the transaction.
 *
 * Transfers are listed newest first (`seq < last`), so commit order does not matter for them: a
 * transfer that commits late below the cursor is on a later page, and one above it was not there
 * when the first page was read. On PostgreSQL they take a real sequence (`transfer_seq`), which
 * never blocks, so concurrent transfers do not serialize here. SQLite runs one writer at a time
 * anyway and keeps the counter row.
 *
 * `em` must be inside a transaction (`em.transactional(...)`), or the lock is released at once.
 */
export async function nextSequenceValue(em: EntityManager, name: SequenceName): Promise<number> {
  if (name === 'transfer' && databaseKindOf(em.getPlatform()) === 'postgresql') {
    const rows = await em.execute<{ value: number | string }[]>(`select nextval('transfer_seq') as value`);
    return Number(rows[0].value);
  }
  const rows = await em.execute<{ value: number | string }[]>(NEXT_COUNTER_VALUE, [name]);
  return Number(rows[0].value);
}

/** `nextSequenceValue` on SQLite inside a synchronous transaction of `writer` (the counter row). */
export function sqliteSequence(writer: SqliteWriter): (name: SequenceName) => number {
  const next = writer.statement(NEXT_COUNTER_VALUE);
  return (name) => Number((next.get(name) as { value: number | string }).value);
}

import type { EntityManager } from '@mikro-orm/sql';

/** The counters in use; each backs the `seq` column of one table. */
export type SequenceName = 'asset' | 'transfer';

/**
 * Takes the next value of a named counter (1, 2, 3, ...) inside the caller's transaction.
 *
 * Why a counter row and not an autoincrement column: SQLite only autoincrements an INTEGER PRIMARY
 * KEY, and on PostgreSQL a sequence hands out values in insert order, not commit order, so a cursor
 * (`seq > last`) could step over a row that commits late. The upsert below locks the counter row
 * until the transaction ends, so values become visible in increasing order on both databases, and a
 * rolled-back transaction gives its value back. The price is that writers of one counter serialize
 * from this call to their commit: call it as late as possible in the transaction.
 *
 * `em` must be inside a transaction (`em.transactional(...)`), or the lock is released at once.
 */
export async function nextSequenceValue(em: EntityManager, name: SequenceName): Promise<number> {
  const rows = await em.execute<{ value: number | string }[]>(
    `insert into sequence_counter (name, value) values (?, 1)
     on conflict (name) do update set value = sequence_counter.value + 1
     returning value`,
    [name],
  );
  return Number(rows[0].value);
}

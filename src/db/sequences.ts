import type { SqliteWriter } from './write-statements.ts';

/**
 * The counters in use; each backs the `seq` column of one table (the transfer counter also backs
 * `asset.mint_seq`, a ledger NFT's mint's place among the transfers: issue 37).
 */
export type SequenceName = 'asset' | 'transfer';

const NEXT_COUNTER_VALUE = `insert into sequence_counter (name, value) values (?, 1)
     on conflict (name) do update set value = sequence_counter.value + 1
     returning value`;

/**
 * The `seq` columns: the next value of a named counter (1, 2, 3, ...) inside the writer's transaction.
 *
 * Assets are listed oldest first with a cursor (`seq > last`), so their values must become visible
 * in increasing order: a row that committed late below the cursor would be skipped for good. The
 * counter row gives that: its upsert locks it until the transaction ends, so values become visible
 * in increasing order on both databases, and a rolled-back transaction gives its value back. The
 * price is that writers of one counter serialize from the upsert to their commit: take it as late as
 * possible in the transaction.
 *
 * Transfers are listed newest first (`seq < last`), so commit order does not matter for them: a
 * transfer that commits late below the cursor is on a later page, and one above it was not there
 * when the first page was read. On PostgreSQL they take a real sequence (`transfer_seq`), which
 * never blocks, so concurrent transfers do not serialize there. PostgreSQL draws both inside
 * `gats_apply_plan` (src/db/functions/gats_apply_plan.sql); SQLite runs one writer at a time and
 * keeps the counter row for both, through the function below.
 */
export function sqliteSequence(writer: SqliteWriter): (name: SequenceName) => number {
  const next = writer.statement(NEXT_COUNTER_VALUE);
  return (name) => Number((next.get(name) as { value: number | string }).value);
}

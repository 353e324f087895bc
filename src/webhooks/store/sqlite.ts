// The delivery store on SQLite (./port.ts). The fast path's successes are written as prepared
// statements on the ORM's connection (../../db/write-statements.ts: the ORM's query builder cost more
// CPU per row than SQLite's own insert), each subscription's cursor in the same transaction as its
// rows. A transaction runs synchronously, holding up the event loop (the API, the WebSocket fan-out)
// while it lasts: so at most about PIECE_ROWS rows each, one after the other in turns of their own.
import type { Orm } from '../../db/orm.ts';
import { type SqliteWriter, sqliteWriter } from '../../db/write-statements.ts';
import type { Logger } from '../../observability/logger.ts';
import { DELIVERY_COLUMN_NAMES, DELIVERY_COLUMNS } from './columns.ts';
import type { CursorMove, DeliveryRow, DeliveryStore } from './port.ts';
import { sharedDeliveryStore } from './shared.ts';

/** Rows per transaction of the fast path's writes, about (each holds up the event loop). */
const PIECE_ROWS = 256;
/** Rows per prepared insert (the rest go one by one through a one-row statement). */
const INSERT_ROWS = 64;
const MOVE_CURSOR_SQL =
  'update webhook_subscription set cursor = ? where id = ? and locked_by = ? and cursor = ?';

function insertDeliveriesSql(rows: number): string {
  const row = `(${DELIVERY_COLUMNS.map(() => '?').join(', ')})`;
  return (
    `insert into webhook_delivery (${DELIVERY_COLUMN_NAMES}) values ${Array.from({ length: rows }, () => row).join(', ')} ` +
    'on conflict (subscription_id, event_id) do nothing'
  );
}

export function createSqliteDeliveryStore(orm: Orm, logger: Logger): DeliveryStore {
  const writer = sqliteWriter(orm, () => {});
  writer.catch(() => undefined);

  /** One transaction's work: some subscriptions' cursors, each with its rows (synchronous). */
  function writePiece(
    sqlite: SqliteWriter,
    instance: string,
    moves: readonly CursorMove[],
    rowsOf: Map<string, DeliveryRow[]>,
  ): string[] {
    const done: string[] = [];
    const move = sqlite.statement(MOVE_CURSOR_SQL);
    const many = sqlite.statement(insertDeliveriesSql(INSERT_ROWS));
    const one = sqlite.statement(insertDeliveriesSql(1));
    const values: unknown[] = [];
    let rows = 0;
    for (const { id, from, to } of moves) {
      if (move.run(to, id, instance, from).changes !== 1) continue;
      done.push(id);
      for (const row of rowsOf.get(id) ?? []) {
        for (const column of DELIVERY_COLUMNS) values.push(sqlite.value(row[column]));
        if (++rows === INSERT_ROWS) {
          many.run(...values);
          values.length = 0;
          rows = 0;
        }
      }
    }
    for (let i = 0; i < values.length; i += DELIVERY_COLUMNS.length)
      one.run(...values.slice(i, i + DELIVERY_COLUMNS.length));
    return done;
  }

  return {
    ...sharedDeliveryStore(orm, { lockClaimedRows: false }),

    async recordSuccesses(instance, moves, rows) {
      const sqlite = await writer;
      const rowsOf = new Map<string, DeliveryRow[]>();
      for (const row of rows) {
        const list = rowsOf.get(row.subscription);
        if (list) list.push(row);
        else rowsOf.set(row.subscription, [row]);
      }
      const done = new Set<string>();
      let piece: CursorMove[] = [];
      let pieceRows = 0;
      const write = async () => {
        const these = piece;
        piece = [];
        pieceRows = 0;
        try {
          for (const id of await sqlite.transaction(() => writePiece(sqlite, instance, these, rowsOf)))
            done.add(id);
        } catch (error) {
          logger.warn({ err: error }, 'webhook delivery records not written');
        }
      };
      for (const move of moves) {
        piece.push(move);
        pieceRows += rowsOf.get(move.id)?.length ?? 0;
        if (pieceRows >= PIECE_ROWS) await write();
      }
      if (piece.length > 0) await write();
      return done;
    },
  };
}

// The delivery store on PostgreSQL (./port.ts). Leases are taken on rows locked `FOR UPDATE SKIP
// LOCKED`; the fast path's successes are written in one statement (its own transaction), a named
// prepared statement on the pool with the rows as arrays: the cursors move, each from where it was,
// and only the moved subscriptions' rows are inserted.
import type { Orm } from '../../db/orm.ts';
import { type PgStatements, pgStatements } from '../../db/write-statements.ts';
import { DELIVERY_COLUMN_NAMES, DELIVERY_COLUMNS } from './columns.ts';
import type { DeliveryStore } from './port.ts';
import { sharedDeliveryStore } from './shared.ts';

/** The SQL types of DELIVERY_COLUMNS, in order. */
const TYPES = [
  'text',
  'text',
  'bigint',
  'text',
  'text',
  'int',
  'timestamptz',
  'timestamptz',
  'timestamptz',
  'int',
  'text',
  'timestamptz',
  'timestamptz',
];
const RECORD_SUCCESSES_SQL =
  'with moved as (update webhook_subscription s set cursor = m.upto from unnest($1::text[], $2::bigint[], $3::bigint[]) ' +
  'as m(id, was, upto) where s.id = m.id and s.locked_by = $4 and s.cursor = m.was returning s.id), ' +
  `written as (insert into webhook_delivery (${DELIVERY_COLUMN_NAMES}) select * from unnest(` +
  TYPES.map((type, i) => `$${i + 5}::${type}[]`).join(', ') +
  `) as r(${DELIVERY_COLUMN_NAMES}) where r.subscription_id in (select id from moved) ` +
  'on conflict (subscription_id, event_id) do nothing) select id from moved';

export function createPostgresDeliveryStore(orm: Orm): DeliveryStore {
  let pg: PgStatements | undefined;
  return {
    ...sharedDeliveryStore(orm, { lockClaimedRows: true }),

    async recordSuccesses(instance, moves, rows) {
      if (moves.length === 0) return new Set();
      pg ??= pgStatements(orm);
      const columns: unknown[][] = DELIVERY_COLUMNS.map(() => []);
      for (const row of rows)
        DELIVERY_COLUMNS.forEach((column, i) => {
          columns[i].push(row[column]);
        });
      const moved = await pg.all('webhook_flush', RECORD_SUCCESSES_SQL, [
        moves.map((move) => move.id),
        moves.map((move) => move.from),
        moves.map((move) => move.to),
        instance,
        ...columns,
      ]);
      return new Set(moved.map((row) => String(row.id)));
    },
  };
}

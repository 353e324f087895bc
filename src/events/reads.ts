// The filtered reads of the outbox (REST catch-up, WebSocket replay, webhook catch-up) as SQL the
// planner can only run one way, on both databases, fresh statistics or not (issue 34).
//
// A read is "the first `limit` events with id > `after` that match the filter, in id order". The
// filter's `OR` (a wallet filter: every priceUpdate, or the wallet as `from`, or as `to`) is split
// into branches that are each a conjunction with one equality on an indexed column; each branch
// reads `id > ? … order by id limit ?` from its `(column, id)` index (the entity's indexes,
// src/db/entities/OutboxEvent.ts), and the union of those (at most 3 x `limit` rows) is sorted and
// cut to `limit`. With the `OR` in one WHERE, PostgreSQL had no index for `type = 'priceUpdate'` and
// walked the primary key over the whole log.
//
// The upper bound (`upTo`, the relay's position) is in the SQL on PostgreSQL only: there the reads
// are pinned to ordered index scans (below), and the bound lets the plan drop, as it starts, the
// partitions made ahead of the ids (src/db/outbox-partitions.ts), which every read started otherwise
// (each costs an index descent; the plan is generic, made once per connection: src/db/dialect.ts,
// `pinnedReadText`). An asset's read is bounded there by the asset's newest event too
// (`asset_last_event`, which the PostgreSQL ledger function writes with each NFT's events), and a
// wallet's `from` and `to` branches by the wallet's (`wallet_last_event`, likewise): the partitions
// after it are dropped once the plan has read it (initialized, never descended into); with several
// branches each such bound is read once (a CTE, `bounds`). A branch of price updates stops at the
// newest one the relay has handed over, a value (`priceUpdatesUpTo`): dropped as the plan starts.
// Unpinned (SQLite), `id > ? and id <= ?` let a planner with stale statistics read the whole range
// with a bitmap scan and a sort (issue 34), so there rows past `upTo` are dropped here instead: the
// matches at or below it are a prefix of the matches in id order, so the first `limit` of them are
// the same rows either way, and the rows past the relay's position are the few being committed.
// Both databases drop them here too (`eventsUpTo`).
//
// On PostgreSQL the branches' ordered index scans are also made the only plan
// (POSTGRES_READ_SETTINGS, src/db/dialect.ts): with stale statistics an equality (`asset_id = 'gold'`) is estimated at
// a handful of rows, and the planner read all of its matches with a bitmap scan and sorted them
// (test/integration/events/event-read-plans.test.ts shows both).
import type { EntityManager } from '@mikro-orm/sql';
import { dialectOf } from '../db/dialect.ts';
import type { EventType } from '../db/entities/OutboxEvent.ts';
import { EVENT_TYPES, type OutboxEvent } from '../db/entities/OutboxEvent.ts';
import { ZERO_ADDRESS } from '../domain/ledger/addresses.ts';
import type { EventFilter } from './filter.ts';

/** The columns of an event row, in the order of the relay's read (./store.ts). */
const COLUMNS = 'id, type, occurred_at, data, asset_id, collection_id, wallets, operation_id';
/** A wallet branch's condition (`branchesOf`), which the wallet's bound applies to (`keyBounds`). */
const FROM_WALLET = 'from_wallet = ?';
const TO_WALLET = 'to_wallet = ?';
/** The condition of a branch of price updates only (`branchesOf`), which `priceBound` bounds. */
const PRICE_UPDATES: Condition = { sql: 'type = ?', params: ['priceUpdate'] };

export interface EventReadQuery {
  /** `?` placeholders, unquoted lowercase identifiers: the same text for SQLite and PostgreSQL. */
  sql: string;
  params: unknown[];
}

interface Condition {
  sql: string;
  params: unknown[];
}

/**
 * The SQL of the first `limit` events after `after` (and at or below `upTo` when given: pinned reads
 * only, see the top of the file) matching `filter` (every event when absent), in id order; null when
 * the filter can match nothing (no type).
 */
export function eventReadQuery(
  after: number,
  limit: number,
  filter?: EventFilter,
  upTo?: number,
  priceUpdatesUpTo?: number,
): EventReadQuery | null {
  const branches = filter ? branchesOf(filter) : [[]];
  if (branches.length === 0) return null;
  const bounds: Condition[] =
    upTo === undefined
      ? [{ sql: 'id > ?', params: [after] }]
      : [{ sql: 'id > ? and id <= ?', params: [after, upTo] }];
  const keys = upTo === undefined ? [] : keyBounds(filter, upTo);
  // With several branches, each key's bound is read once, in a CTE the branches read it from.
  const shared = keys.length > 0 && branches.length > 1;
  const keyCondition = (key: KeyBound): Condition =>
    shared
      ? { sql: `id <= (select ${key.name} from bounds)`, params: [] }
      : { sql: `id <= ${key.sql}`, params: key.params };
  const selects = branches.map((conditions) => {
    const all = [
      ...bounds,
      ...keys.filter((key) => key.applies(conditions)).map(keyCondition),
      ...priceBound(conditions, upTo, priceUpdatesUpTo),
      ...conditions,
    ];
    return {
      sql: `select ${COLUMNS} from outbox_event where ${all.map((condition) => condition.sql).join(' and ')} order by id limit ?`,
      params: [...all.flatMap((condition) => condition.params), limit],
    };
  });
  if (selects.length === 1) return selects[0];
  // Each branch inside its own subquery: its ORDER BY and LIMIT stay its own (neither database pushes
  // a condition into a subquery with a LIMIT), and the outer ORDER BY/LIMIT merge them.
  const cte = shared
    ? {
        sql: `with bounds as materialized (select ${keys.map((key) => `${key.sql} as ${key.name}`).join(', ')}) `,
        params: keys.flatMap((key) => key.params),
      }
    : { sql: '', params: [] };
  return {
    sql: `${cte.sql}${selects.map((select, index) => `select * from (${select.sql}) as b${index}`).join(' union all ')} order by id limit ?`,
    params: [...cte.params, ...selects.flatMap((select) => select.params), limit],
  };
}

/** A key's newest event, where the branches that read that key's events stop (`keyBounds`). */
interface KeyBound {
  name: string;
  /** A scalar expression: the bound, or `upTo` when the key has no row. */
  sql: string;
  params: unknown[];
  /** Whether a branch with these conditions reads only that key's events. */
  applies: (conditions: Condition[]) => boolean;
}

/**
 * PostgreSQL's pinned reads (see the top of the file) stop at the newest event of the key they read:
 * an asset's at the asset's (`asset_last_event`, which the ledger function writes with each NFT's
 * events), a wallet's `from` and `to` branches at the wallet's as either (`wallet_last_event`,
 * likewise). An NFT's or a wallet's few events rarely fill a page, and without the bound each branch
 * descended into every partition up to the relay's position. A condition of its own beside
 * `id <= upTo`, so the partitions past `upTo` are still dropped as the plan starts; this one drops
 * the rest when its subquery has run (initialized, never descended into). No row (a key of a release
 * before the table, the zero address, a currency): `upTo`.
 */
function keyBounds(filter: EventFilter | undefined, upTo: number): KeyBound[] {
  const keys: KeyBound[] = [];
  if (filter?.assetId !== undefined)
    keys.push({
      name: 'asset_bound',
      sql: 'coalesce((select event_id from asset_last_event where asset_id = ?), ?)',
      params: [filter.assetId, upTo],
      applies: () => true,
    });
  if (filter?.wallet !== undefined)
    keys.push({
      name: 'wallet_bound',
      sql: 'coalesce((select event_id from wallet_last_event where wallet = ?), ?)',
      params: [filter.wallet, upTo],
      applies: (conditions) =>
        conditions.some((condition) => condition.sql === FROM_WALLET || condition.sql === TO_WALLET),
    });
  return keys;
}

/**
 * A branch of price updates only (a wallet read's, or a filter of that type alone) stops at the
 * newest price update the relay has handed over (`priceUpdatesUpTo`, at or below `upTo`): rare
 * price updates do not fill a page, and without it the branch descended into every partition up to
 * the relay's position. A value, so the plan drops the partitions past it as it starts.
 */
function priceBound(
  conditions: Condition[],
  upTo: number | undefined,
  priceUpdatesUpTo: number | undefined,
): Condition[] {
  if (upTo === undefined || priceUpdatesUpTo === undefined) return [];
  const prices = conditions.some(
    (condition) => condition.sql === PRICE_UPDATES.sql && condition.params[0] === PRICE_UPDATES.params[0],
  );
  return prices ? [{ sql: 'id <= ?', params: [priceUpdatesUpTo] }] : [];
}

/**
 * Each address's newest event as `from` or `to` among the events with id > `after`, the zero address
 * left out (columns `wallet`, `id`): what `wallet_last_event` holds as the ledger function writes it
 * (src/db/functions/gats_apply_plan.sql), in one pass over the log. For `npm run db:check`, the
 * ledger tests' invariants and the writers of the log in bulk (`keepWalletBoundsSql`).
 */
export function walletNewestEventsSql(after = 0): string {
  const id = Math.trunc(after);
  return (
    `select x.wallet, max(x.id) as id from (select from_wallet as wallet, id from outbox_event where id > ${id} and from_wallet is not null ` +
    `union all select to_wallet, id from outbox_event where id > ${id} and to_wallet is not null) x ` +
    `where x.wallet <> '${ZERO_ADDRESS}' group by x.wallet`
  );
}

/** Raises each address's row of `wallet_last_event` to its newest event after `after` (the log written in bulk). */
export function keepWalletBoundsSql(after: number): string {
  return (
    `insert into wallet_last_event (wallet, event_id) ${walletNewestEventsSql(after)} ` +
    'on conflict (wallet) do update set event_id = greatest(wallet_last_event.event_id, excluded.event_id)'
  );
}

/** The filter as disjoint conjunctions (their union is the filter's set, no row in two of them). */
function branchesOf(filter: EventFilter): Condition[][] {
  const common: Condition[] = [];
  if (filter.assetId !== undefined) common.push({ sql: 'asset_id = ?', params: [filter.assetId] });
  if (filter.collection !== undefined) common.push({ sql: 'collection_id = ?', params: [filter.collection] });
  const types = EVENT_TYPES.filter((type) => filter.types.has(type));
  if (types.length === 0) return [];
  if (filter.wallet === undefined) {
    // Every type: no condition (every row has one of EVENT_TYPES; writers are typed).
    if (types.length === EVENT_TYPES.length) return [common];
    // An asset or collection drives the read; the types filter its rows.
    if (common.length > 0) return [[typeIn(types), ...common]];
    // Types alone: one branch per type, each on (type, id).
    return types.map((type) => [{ sql: 'type = ?', params: [type] }]);
  }
  const wallet = filter.wallet;
  const branches: Condition[][] = [];
  // A wallet filter never applies to price updates (./filter.ts, `matches`): all of them, on (type, id).
  if (types.includes('priceUpdate')) branches.push([PRICE_UPDATES, ...common]);
  const others = types.filter((type) => type !== 'priceUpdate');
  if (others.length > 0) {
    const type =
      others.length === EVENT_TYPES.length - 1
        ? { sql: 'type <> ?', params: ['priceUpdate'] }
        : typeIn(others);
    branches.push([{ sql: FROM_WALLET, params: [wallet] }, type, ...common]);
    // A transfer to oneself is in the `from` branch already.
    branches.push([
      { sql: TO_WALLET, params: [wallet] },
      { sql: '(from_wallet is null or from_wallet <> ?)', params: [wallet] },
      type,
      ...common,
    ]);
  }
  return branches;
}

function typeIn(types: readonly EventType[]): Condition {
  return types.length === 1
    ? { sql: 'type = ?', params: [types[0]] }
    : { sql: `type in (${types.map(() => '?').join(', ')})`, params: [...types] };
}

/**
 * A row of the read as the driver returns it (PostgreSQL: int8 as text, jsonb parsed, timestamptz as
 * a Date; SQLite: JSON as text, the date as the column stores it).
 */
export interface EventRow {
  id: string | number;
  type: OutboxEvent['type'];
  occurred_at: unknown;
  data: unknown;
  asset_id: string;
  collection_id: string | null;
  wallets: unknown;
  operation_id: string | null;
}

/** How a driver's values become the entity's: `date` and `json` of ../db/read-statements.ts. */
export interface RowDecoder {
  date(value: unknown): Date;
  json(value: unknown): unknown;
}

export function eventOfRow(row: EventRow, decode: RowDecoder): OutboxEvent {
  return {
    id: Number(row.id),
    type: row.type,
    occurredAt: decode.date(row.occurred_at),
    data: decode.json(row.data),
    assetId: row.asset_id,
    collectionId: row.collection_id,
    wallets: decode.json(row.wallets),
    operationId: row.operation_id ?? null,
  } as OutboxEvent;
}

/** The rows of a read at or below `upTo` (see the top of this file), as entities. */
export function eventsUpTo(rows: readonly EventRow[], decode: RowDecoder, upTo?: number): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  for (const row of rows) {
    if (upTo !== undefined && Number(row.id) > upTo) break;
    events.push(eventOfRow(row, decode));
  }
  return events;
}

/** Driver values of both databases (PostgreSQL: Date and parsed jsonb; SQLite: text or a number). */
export const DECODE: RowDecoder = {
  date: (value) => (value instanceof Date ? value : new Date(value as string | number)),
  json: (value) => (typeof value === 'string' ? JSON.parse(value) : value),
};

/**
 * The first `limit` events with id > `after` (and <= `upTo` when given) matching `filter`, in id
 * order, read with the planner pinned (the dialect's `pinnedRead`, src/db/dialect.ts). SQLite: through
 * `em`. PostgreSQL: on a connection of the ORM's pool, outside any transaction of `em` (the readers
 * hold none), with POSTGRES_READ_SETTINGS; a statement prepared once per connection and run with a
 * generic plan, whose partitions are pruned from the values as it starts (`pinnedReadText`).
 */
export async function readEvents(
  em: EntityManager,
  after: number,
  limit: number,
  filter?: EventFilter,
  upTo?: number,
  priceUpdatesUpTo?: number,
): Promise<OutboxEvent[]> {
  const dialect = dialectOf(em);
  // The bounds in the SQL where the partitions made ahead are to be dropped (PostgreSQL's pinned reads).
  const query = dialect.partitionedOutbox
    ? eventReadQuery(after, limit, filter, upTo, priceUpdatesUpTo)
    : eventReadQuery(after, limit, filter);
  if (!query) return [];
  const rows = await dialect.pinnedRead<EventRow>(em, query);
  return eventsUpTo(rows, DECODE, upTo);
}

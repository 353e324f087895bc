// What differs between the two databases, in one place: the SQL each speaks where they differ, and
// what the service must do differently on each (row locks, the order event ids commit in, a second
// connection to the same file, a planner to pin). The code outside src/db/ and the store adapters
// (src/domain/ledger/store/, src/webhooks/store/) asks this module (or ./transactions.ts), never for
// the database kind itself (./platform.ts; a rule of .dependency-cruiser.cjs).
import { createHash } from 'node:crypto';
import { LockMode, type Platform } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import type { Orm } from './orm.ts';
import { type DatabaseKind, databaseKindOf } from './platform.ts';

/** A statement with `?` placeholders. */
export interface Query {
  sql: string;
  params: unknown[];
}

/** Runs one statement in the caller's transaction. */
type Run = (sql: string, values?: unknown[]) => Promise<unknown>;

export interface Dialect {
  /**
   * Find options for a row the transaction will write back: a row lock (`FOR UPDATE`) on
   * PostgreSQL; none on SQLite, which runs one writing transaction at a time.
   */
  readonly rowLock: { lockMode?: LockMode.PESSIMISTIC_WRITE };
  /**
   * Whether event ids can become visible out of order (PostgreSQL: concurrent writers draw ids from
   * a sequence and commit in any order; SQLite has one writer). See src/events/outbox-lock.ts.
   */
  readonly idsMayCommitOutOfOrder: boolean;
  /**
   * Whether the outbox is partitioned by ranges of id (PostgreSQL: ./outbox-partitions.ts keeps them;
   * SQLite has no partitions, retention deletes by ranges of the primary key).
   */
  readonly partitionedOutbox: boolean;
  /**
   * Runs a read with the planner held to ordered index scans (PostgreSQL: POSTGRES_READ_SETTINGS,
   * outside any transaction of `em`, a statement prepared once per connection and run with a generic
   * plan: `pinnedReadText`); SQLite plans it by itself.
   */
  pinnedRead<T>(em: EntityManager, query: Query): Promise<T[]>;
  /**
   * Holds the planner to ordered index scans for the rest of the caller's transaction (PostgreSQL:
   * POSTGRES_READ_SETTINGS; SQLite: nothing), for reads inside a writing transaction.
   */
  pinInTransaction(run: Run): Promise<void>;
  /** The statement reading the last value the outbox's id sequence gave out, as `value` (0 or no row: none). */
  readonly outboxSequenceSql: string;
  /** Moves the outbox's id sequence so that the next id it gives is `last + 1`. */
  setOutboxSequence(run: Run, last: number): Promise<void>;
}

/**
 * Planner settings for a pinned read, local to its statement's implicit transaction: the only plan
 * left is each branch's ordered index scan under its LIMIT (and a merge). Without them PostgreSQL
 * chose by its estimates, and with statistics older than the rows (no ANALYZE since an airdrop: the
 * default selectivities say an equality matches a handful of rows) it read every match with a bitmap
 * scan and sorted them (a currency's every transfer, to return 100). The reads pinned
 * (src/events/reads.ts) cannot be planned without an index (every branch has `id > ?` on an index
 * ending with the id), so nothing gets slower. No JIT either: see POSTGRES_PINNED_SESSION.
 */
export const POSTGRES_READ_SETTINGS =
  'set local enable_seqscan = off; set local enable_bitmapscan = off; set local enable_sort = off; set local jit = off;';

/**
 * Those settings for a whole session whose every read is an ordered index scan (the relay's own
 * connection: src/events/relay-connection.ts), and a generic plan for each of its prepared statements
 * (`id > $1 order by id limit $2`: the relay's pages, every flush of a REST page). Left to choose,
 * PostgreSQL kept planning the relay's read at each run (a custom plan estimated cheaper than the
 * generic one): on a grown log each planning probed the ends of every partition's key, 12 blocks of
 * the 41 an NFT's event page cost in all (issue 34, PostgreSQL, 1,010,001 holdings). Without JIT
 * (`jit = off`, in the per-read settings too): a generic plan of a large log is estimated at a third
 * of its rows, past `jit_above_cost`, and compiling it took 108-182 ms at every run for a read of 0.06
 * ms (10,000,000 events): every REST page waits for a relay read, so all of them were held to ~8 a
 * second.
 */
export const POSTGRES_PINNED_SESSION = `${POSTGRES_READ_SETTINGS.replaceAll('set local ', 'set ')} set plan_cache_mode = force_generic_plan;`;

/** A connection of a `pg` Pool (the ORM's or a replica's; pg ships no types, MikroORM hands it back untyped). */
interface PgClient {
  query(text: string): Promise<{ rows: unknown[] } | { rows: unknown[] }[]>;
  /** Back to the pool; with an error, the pool closes the connection instead. */
  release(error?: Error): void;
}

/** What a pinned read needs of a `pg` Pool. */
export interface PinnedReadPool {
  connect(): Promise<PgClient>;
}

/**
 * The statements each pooled connection has prepared (`prepare gats_pinned_…`): a connection is a
 * `pg` client object for its whole life, and its prepared statements die with it.
 */
const preparedOn = new WeakMap<PgClient, Set<string>>();
/**
 * Pinned statements kept prepared per connection before they are deallocated: the shapes of the reads
 * are few (the event filters' branches and type lists, the transfer histories), so this only bounds
 * a connection's memory against shapes nobody foresaw.
 */
const PREPARED_PER_CONNECTION = 200;

/** The name of the prepared statement of a pinned read's SQL (the same on every connection). */
function statementName(sql: string): string {
  return `gats_pinned_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
}

/**
 * The text PostgreSQL is sent for a pinned read, one simple-protocol message (several statements in
 * one implicit transaction: `set local` holds for the read and ends with it, an error rolls all of it
 * back): the statement's PREPARE when the connection has not prepared it yet, the planner settings,
 * and its EXECUTE with the values written in by MikroORM's formatter as `em.execute` does. Executed
 * with a generic plan (`plan_cache_mode`), made once per connection: planning a read of the
 * partitioned outbox costs PostgreSQL's CPU for every partition its bounds keep, more than the read
 * itself on a long log, and the plan's partitions are pruned from the values when it starts (issue 34). The
 * settings leave one plan whatever the values, so a generic plan is the plan a custom one would be.
 * `prefix` goes before the EXECUTE (tests: `explain`).
 */
export function pinnedReadText(platform: Platform, query: Query, prepared: boolean, prefix = ''): string {
  const name = statementName(query.sql);
  let index = 0;
  const prepare = prepared ? '' : `prepare ${name} as ${query.sql.replace(/\?/g, () => `$${++index}`)}; `;
  const values = query.params.length > 0 ? `(${query.params.map(() => '?').join(', ')})` : '';
  return `${prepare}${POSTGRES_READ_SETTINGS} set local plan_cache_mode = force_generic_plan; ${prefix}${platform.formatQuery(`execute ${name}${values}`, query.params)}`;
}

/** Runs a pinned read (`pinnedReadText`) on a connection of `pool`; the rows of its last statement. */
export async function runPinnedRead<T>(
  pool: PinnedReadPool,
  platform: Platform,
  query: Query,
  prefix = '',
): Promise<T[]> {
  const client = await pool.connect();
  const name = statementName(query.sql);
  let prepared = preparedOn.get(client);
  let results: Awaited<ReturnType<PgClient['query']>>;
  try {
    if (!prepared || prepared.size >= PREPARED_PER_CONNECTION) {
      // Its own statements only: `pg`'s named statements on the same connection (./read-statements.ts)
      // are prepared once and then only bound, so `deallocate all` would break them.
      if (prepared) await client.query([...prepared].map((name) => `deallocate ${name};`).join(' '));
      prepared = new Set();
      preparedOn.set(client, prepared);
    }
    results = await client.query(pinnedReadText(platform, query, prepared.has(name), prefix));
  } catch (error) {
    // Whether the PREPARE stayed is not known: the connection goes, and with it what it prepared.
    client.release(error as Error);
    throw error;
  }
  prepared.add(name);
  client.release();
  const list = Array.isArray(results) ? results : [results];
  return list[list.length - 1].rows as T[];
}

/** `runPinnedRead` on the ORM's `pg` Pool (PostgreSQL only). */
export async function readPinned<T>(em: EntityManager, query: Query, prefix = ''): Promise<T[]> {
  const pool = (await em.getConnection().getNativeClient()) as PinnedReadPool;
  return runPinnedRead<T>(pool, em.getPlatform(), query, prefix);
}

const DIALECTS: Record<DatabaseKind, Dialect> = {
  postgresql: {
    rowLock: { lockMode: LockMode.PESSIMISTIC_WRITE },
    idsMayCommitOutOfOrder: true,
    partitionedOutbox: true,
    pinnedRead: (em, query) => readPinned(em, query),
    async pinInTransaction(run) {
      for (const setting of POSTGRES_READ_SETTINGS.split(';')) if (setting.trim()) await run(setting);
    },
    outboxSequenceSql:
      'select case when is_called then last_value else 0 end as value from outbox_event_id_seq',
    async setOutboxSequence(run, last) {
      await run(`select setval('outbox_event_id_seq', ?, true)`, [last]);
    },
  },
  sqlite: {
    rowLock: {},
    idsMayCommitOutOfOrder: false,
    partitionedOutbox: false,
    pinnedRead: (em, query) => em.execute(query.sql, query.params),
    async pinInTransaction() {},
    outboxSequenceSql: `select seq as value from sqlite_sequence where name = 'outbox_event'`,
    async setOutboxSequence(run, last) {
      await run(`delete from sqlite_sequence where name = 'outbox_event'`);
      await run(`insert into sqlite_sequence (name, seq) values ('outbox_event', ?)`, [last]);
    },
  },
};

/** The dialect of the database behind an ORM, an EntityManager or a platform. */
export function dialectOf(source: Orm | EntityManager | Platform): Dialect {
  const platform =
    'em' in source ? source.em.getPlatform() : 'getPlatform' in source ? source.getPlatform() : source;
  return DIALECTS[databaseKindOf(platform)];
}

/**
 * The database's file when it is one (SQLite), for a second connection to it (a worker thread's);
 * undefined on a server (PostgreSQL).
 */
export function databaseFile(orm: Orm): string | undefined {
  return databaseKindOf(orm.em.getPlatform()) === 'sqlite' ? (orm.config.get('dbName') as string) : undefined;
}

import { dirname, resolve } from 'node:path';
import type { MikroORM, Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { type AbstractSqlDriver, type SqlEntityManager, MikroORM as SqlMikroORM } from '@mikro-orm/sql';
import { ConfigError } from '../config/index.ts';
import { ensurePrivateDir, ensurePrivateFile, restrictToOwner } from '../crypto/private-files.ts';
import { databaseFailure, NOT_CONNECTED } from './availability.ts';
import { entities } from './entities/index.ts';
import { applyDatabaseFunctions, FUNCTIONS_TABLE } from './functions/index.ts';
import { migrationsList } from './migrations/index.ts';
import { type DatabaseKind, databaseKindOf } from './platform.ts';
import { SQLITE_MMAP_PRAGMA } from './sqlite-read-statements.ts';

/**
 * The ORM as the rest of the service sees it: SQL-capable (query builder, `execute`, row locks).
 * On SQLite all queries share one connection and transactions run one at a time: inside
 * `em.transactional(cb)` use only the `em` given to `cb`; a query through any other EntityManager
 * waits for the transaction to end, which never comes.
 */
export type Orm = MikroORM<AbstractSqlDriver, SqlEntityManager<AbstractSqlDriver>>;

export interface DatabaseOptions {
  /** A `postgres://` or `postgresql://` URL selects PostgreSQL; without one, SQLite is used. */
  databaseUrl?: string;
  /** The SQLite file; its directory is created if missing. */
  sqlitePath: string;
  /** Log every query. */
  debug?: boolean;
  /** PostgreSQL pool size (at least 2; default 10). */
  poolMax?: number;
  /**
   * PostgreSQL: how long a new connection, or a free pooled one, may take before the attempt fails
   * (default 5000 ms). Bounds start-up against an unreachable server and turns a dry pool into
   * prompt 503s instead of requests that wait forever.
   */
  connectTimeoutMs?: number;
  /** Where pool trouble (connections lost in use, exhaustion) is reported. */
  logger?: PoolLogger;
  /**
   * PostgreSQL: create the database named in the URL when it does not exist (`npm run db:migrate --
   * --create-database`). Otherwise a missing database is a configuration error: a typo in
   * DATABASE_URL must not start an empty ledger.
   */
  createDatabase?: boolean;
}

/** The logger members used here (pino's). */
export interface PoolLogger {
  warn(object: object, message: string): void;
}

/** What `/metrics` reports about the PostgreSQL pool. */
export interface PoolStats {
  max: number;
  /** Connections open (idle + in use). */
  total: number;
  idle: number;
  /** Requests waiting for a free connection. */
  waiting: number;
  /** Waits for a connection that ran out of time (the pool was exhausted or the server away). */
  acquireTimeouts: number;
  /** Connections that broke while a request held them, removed from the pool. */
  lostInUse: number;
}

/** The members of a `pg` pool and client used by `hardenPool`. */
interface PgPoolEvents {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  connect(
    callback?: (error: unknown, client?: PgPooledClient, done?: unknown) => void,
  ): Promise<PgPooledClient>;
  on(event: 'connect' | 'acquire', listener: (client: PgPooledClient) => void): void;
  on(event: 'release', listener: (error: unknown, client: PgPooledClient) => void): void;
}
interface PgPooledClient {
  release: (error?: Error) => void;
  once(event: 'end', listener: () => void): void;
}

/** How often the same pool trouble is logged at most. */
const POOL_LOG_INTERVAL_MS = 10_000;

/**
 * Makes the pool recover from connections that die while checked out. Kysely releases a
 * transaction's connection only after its COMMIT or ROLLBACK succeeds; on a dead connection both
 * fail, so the connection was never given back and `pg-pool` kept counting it: a few backends
 * terminated mid-transaction and the pool ran dry for good (issue 14.1). A client that ends while
 * checked out is now released with an error (which removes it from the pool) and its later release
 * by its holder, if any, does nothing.
 */
function hardenPool(pool: PgPoolEvents, max: number, logger: PoolLogger | undefined): () => PoolStats {
  const checkedOut = new Set<PgPooledClient>();
  let acquireTimeouts = 0;
  let lostInUse = 0;
  const lastLogged = { lost: 0, exhausted: 0 };
  const warn = (kind: keyof typeof lastLogged, object: object, message: string) => {
    const now = Date.now();
    if (now - lastLogged[kind] < POOL_LOG_INTERVAL_MS) return;
    lastLogged[kind] = now;
    logger?.warn(object, message);
  };
  const lost = new WeakSet<PgPooledClient>();
  const countLost = (client: PgPooledClient) => {
    if (lost.has(client)) return;
    lost.add(client);
    lostInUse++;
    warn('lost', { lostInUse }, 'database connection lost while in use: removed from the pool');
  };
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (error, client) => {
    checkedOut.delete(client);
    // A holder whose statement failed with the broken socket may release it (with that error) before
    // the client's 'end' event: `pool.query` does so synchronously. Counted once either way.
    if (error && databaseFailure(error) === 'connection-lost') countLost(client);
  });
  pool.on('connect', (client) => {
    client.once('end', () => {
      if (!checkedOut.has(client)) return;
      countLost(client);
      const release = client.release;
      client.release = () => {};
      release(new Error('the connection ended while in use'));
    });
  });
  const countTimeout = (error: unknown) => {
    // Getting a connection failed: nothing was sent (src/db/availability.ts reads the mark).
    if (error instanceof Error) Object.assign(error, { [NOT_CONNECTED]: true });
    if (error instanceof Error && /timeout exceeded when trying to connect/i.test(error.message)) {
      acquireTimeouts++;
      warn(
        'exhausted',
        { acquireTimeouts, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max },
        'database pool exhausted or database not answering: no connection within the time-out',
      );
    }
  };
  // Both forms: Kysely awaits the promise, `pool.query` (src/db/write-statements.ts) passes a callback.
  const connect = pool.connect.bind(pool);
  pool.connect = ((callback?: (error: unknown, client?: PgPooledClient, done?: unknown) => void) => {
    if (callback) {
      return connect((error: unknown, client?: PgPooledClient, done?: unknown) => {
        if (error) countTimeout(error);
        callback(error, client, done);
      });
    }
    return connect().catch((error: unknown) => {
      countTimeout(error);
      throw error;
    });
  }) as PgPoolEvents['connect'];
  return () => ({
    max,
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    acquireTimeouts,
    lostInUse,
  });
}

/**
 * Per-connection SQLite settings. WAL lets readers run beside the writer (and a second process, such
 * as the migration script, share the file); busy_timeout makes a writer wait for a lock instead of
 * failing at once. MikroORM already turns foreign keys on, repeated here so the list is complete.
 *
 * synchronous = NORMAL: in WAL mode a commit is then an append to the WAL without an fsync (the WAL
 * is synced at checkpoints). The database stays consistent after a crash or power loss; what a power
 * loss (not a process crash) can undo is the last transactions before it, each all or nothing. That
 * is SQLite's recommended setting for WAL, and it takes the fsync out of every write request; FULL
 * (the default) would make each commit wait for the disk. Deployments that cannot lose the last
 * second of commits on a power cut run PostgreSQL.
 *
 * wal_autocheckpoint = 10000 pages (40 MB of WAL) instead of SQLite's 1000: a checkpoint syncs the WAL
 * and copies it back into the database file, two fsyncs, on the committing connection while the event
 * loop waits. Under the transfer load (50 clients) checkpoints every 1000 pages took about half of a
 * transfer's transaction time (in-process: ~400 µs against ~200 µs per transfer at 10000), and fewer,
 * larger checkpoints copy each hot page (balances, index ends) once instead of once per 1000 pages.
 * The cost: a power loss (not a process crash) can undo up to 10000 pages of commits since the last
 * checkpoint instead of 1000 (in practice also bounded by the OS writing dirty pages back).
 * The service itself turns them off once migrated and checkpoints on a thread instead
 * (./sqlite-checkpoints.ts); this setting is what operator commands, and the service if that
 * thread stops, use.
 *
 * temp_store = MEMORY: each write of a group commit runs in a savepoint, whose sub-journal (the
 * original of every page it changes) spills to a temporary file past 64 KiB; a transfer changes about
 * 17 pages (its rows and their indexes), so with files every transfer created, wrote, and deleted a
 * file in the temporary directory (strace: openat, two fstat, ~5 pwrite, close per transfer; 78 system
 * calls per transfer before, 67 after). In memory the sub-journal costs a transaction's pages for its
 * duration; a write no longer fails for a full or read-only temporary directory. Sorts and temporary
 * indexes of reads also stay in memory: the service's queries are paginated and indexed.
 *
 * mmap_size: reads through a memory map of the file, as the read-only connections' (SQLITE_MMAP_BYTES,
 * ./sqlite-read-statements.ts, says why).
 */
export const SQLITE_AUTOCHECKPOINT_PAGES = 10_000;

const SQLITE_PRAGMAS = [
  'pragma journal_mode = wal',
  'pragma synchronous = normal',
  `pragma wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`,
  'pragma foreign_keys = on',
  'pragma busy_timeout = 5000',
  'pragma temp_store = memory',
  SQLITE_MMAP_PRAGMA,
];

/** Arbitrary, fixed: the advisory lock that serializes migrations across instances on PostgreSQL. */
const MIGRATION_LOCK_KEY = 7_301_944_120;

/** Arbitrary, fixed: the advisory lock held by an instance through its whole start-up bootstrap. */
const STARTUP_LOCK_KEY = 7_301_944_121;

/**
 * Runs an instance's start-up bootstrap (migrations, built-in OAuth clients, signing keys, the demo
 * seed) while holding a PostgreSQL session lock, so instances started together on an empty database
 * take turns: the first creates, the others find everything in place (a concurrent twin's insert
 * used to fail on a duplicate key). The lock lives on a connection of its own, outside the pool the
 * bootstrap uses. SQLite: one writer at a time already; nothing to hold.
 */
export async function withStartupLock<T>(orm: Orm, bootstrap: () => Promise<T>): Promise<T> {
  if (databaseKind(orm) !== 'postgresql') return bootstrap();
  const pool = (await orm.em.getConnection().getNativeClient()) as {
    Client: new (
      options: unknown,
    ) => {
      connect(): Promise<void>;
      query(text: string, values?: unknown[]): Promise<unknown>;
      end(): Promise<void>;
      on(event: 'error', listener: () => void): void;
    };
    options: unknown;
  };
  const client = new pool.Client(pool.options);
  client.on('error', () => {}); // a dropped lock connection releases the lock; the bootstrap's own queries report
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [STARTUP_LOCK_KEY]);
    return await bootstrap();
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** What Kysely hands to `onCreateConnection` (its own type is not a dependency of ours). */
interface KyselyConnection {
  executeQuery(query: { sql: string; parameters: readonly unknown[] }): Promise<unknown>;
}

/** The ORM, opened, with the state of its PostgreSQL pool (null on SQLite). */
interface OpenedOrm {
  orm: Orm;
  poolStats(): PoolStats | null;
}

/**
 * Opens the ORM (connecting, not migrating) with every entity registered. The service opens it
 * through `openDatabase` (./database.ts), which adds what rides on it.
 */
export async function openOrm(options: DatabaseOptions): Promise<OpenedOrm> {
  const common = {
    entities,
    extensions: [Migrator],
    debug: options.debug ?? false,
    migrations: {
      migrationsList,
      // No snapshot files: scripts/db-migration-create.ts diffs against migrated scratch databases.
      snapshot: false,
      silent: true,
    },
    // Database functions live in src/db/functions/*.sql, applied by `migrate()`, not declared to the
    // ORM: the schema diff (tests, db:migration:create) must not offer to drop them, nor the table
    // that records their checksums.
    schemaGenerator: { ignoreRoutines: true, skipTables: [FUNCTIONS_TABLE] },
  } satisfies Partial<Options>;
  if (options.databaseUrl) {
    if (!/^postgres(ql)?:\/\//.test(options.databaseUrl)) {
      throw new Error('DATABASE_URL must be a postgres:// or postgresql:// URL');
    }
    if (options.poolMax !== undefined && options.poolMax < 2) {
      throw new Error('The PostgreSQL pool needs at least 2 connections (see migrate)');
    }
    const max = options.poolMax ?? 10;
    let stats: (() => PoolStats) | undefined;
    // Each driver is loaded when its database is opened: a service on SQLite loads no PostgreSQL
    // client (pg and its type parsers), and the reverse.
    const { PostgreSqlDriver } = await import('@mikro-orm/postgresql');
    const orm = await SqlMikroORM.init<AbstractSqlDriver, SqlEntityManager<AbstractSqlDriver>>({
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: options.databaseUrl,
      // A database named in DATABASE_URL that does not exist is a configuration error, not a
      // request to create an empty ledger (`npm run db:migrate -- --create-database` creates it).
      ensureDatabase: false,
      pool: { max },
      driverOptions: {
        connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
        onPoolCreated: (pool: PgPoolEvents) => {
          stats = hardenPool(pool, max, options.logger);
        },
      },
    });
    // Asked to (db:migrate --create-database): a missing database is created, from the server's
    // maintenance database, before the first query (32.2: before, nothing created it).
    if (options.createDatabase) await orm.schema.ensureDatabase();
    await checkPostgresReachable(orm, options);
    // The pool is made when the first connection is needed, not necessarily during init.
    const poolStats = () =>
      stats?.() ?? { max, total: 0, idle: 0, waiting: 0, acquireTimeouts: 0, lostInUse: 0 };
    return { orm, poolStats };
  }
  const sqlitePath = resolve(options.sqlitePath);
  ensurePrivateDir(dirname(sqlitePath));
  // SQLite gives the -wal and -shm files the database file's permissions.
  ensurePrivateFile(sqlitePath);
  for (const companion of ['-wal', '-shm']) restrictToOwner(sqlitePath + companion);
  const { SqliteDriver } = await import('@mikro-orm/sqlite');
  const orm = await SqlMikroORM.init<AbstractSqlDriver, SqlEntityManager<AbstractSqlDriver>>({
    ...common,
    driver: SqliteDriver,
    dbName: sqlitePath,
    onCreateConnection: async (connection) => {
      for (const sql of SQLITE_PRAGMAS) {
        await (connection as KyselyConnection).executeQuery({ sql, parameters: [] });
      }
    },
  });
  return { orm, poolStats: () => null };
}

/**
 * Start-up fails fast and says which setting to fix: the database named in DATABASE_URL must exist
 * and answer within DATABASE_CONNECT_TIMEOUT_MS.
 */
async function checkPostgresReachable(orm: Orm, options: DatabaseOptions): Promise<void> {
  const url = new URL(options.databaseUrl as string);
  const where = `${url.hostname}:${url.port || 5432}`;
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  try {
    await orm.em.getConnection().execute('select 1');
  } catch (error) {
    await orm.close(true).catch(() => undefined);
    const { code, message } = error as { code?: string; message?: string };
    if (code === '3D000')
      throw new ConfigError(
        `DATABASE_URL names the database "${name}", which does not exist on ${where}. Fix the name, or create it: npm run db:migrate -- --create-database`,
      );
    if (code === '28P01' || code === '28000')
      throw new ConfigError(`DATABASE_URL: ${where} refused the user or password (${code})`);
    throw new ConfigError(
      `DATABASE_URL: the database server at ${where} did not answer within DATABASE_CONNECT_TIMEOUT_MS (${options.connectTimeoutMs ?? 5_000} ms): ${code ?? message ?? 'no answer'}`,
    );
  }
}

/**
 * Applies the committed migrations that have not run yet, all or nothing; returns their names (none
 * when up to date). On PostgreSQL the database functions (src/db/functions/*.sql) follow, in the
 * same transaction: each whose file changed, or all when a migration ran. Run it before serving
 * requests.
 */
export async function migrate(orm: Orm): Promise<string[]> {
  const connection = orm.em.getConnection();
  if (databaseKind(orm) === 'postgresql') {
    // Instances started together must not migrate twice: the first takes the lock and migrates, the
    // others wait for its commit and then find nothing pending. (The migrator's own bookkeeping runs
    // on a second pooled connection, so the pool needs at least two.)
    return connection.transactional(async (transaction) => {
      await connection.execute('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY], 'all', transaction);
      const applied = names(await orm.migrator.up({ transaction }));
      await applyDatabaseFunctions(
        (sql, params = []) => connection.execute(sql, params, 'all', transaction),
        applied.length > 0,
      );
      return applied;
    });
  }
  // SQLite alters most things by rebuilding the table (copy, drop, rename), and dropping a table
  // that other rows reference fails while foreign keys are enforced. SQLite's documented procedure:
  // turn enforcement off outside the transaction, then check every reference before committing.
  // getPending also creates the migrations table outside the transaction below. Nothing pending:
  // nothing to check either (`foreign_key_check` reads every reference of every table, the start-up's
  // one cost that grew with the ledger: 37 s at 100,000 holdings, issue 34).
  if ((await orm.migrator.getPending()).length === 0) return [];
  await connection.execute('pragma foreign_keys = off');
  try {
    return await connection.transactional(async (transaction) => {
      const applied = await orm.migrator.up({ transaction });
      const violations = await connection.execute('pragma foreign_key_check', [], 'all', transaction);
      if (violations.length > 0) {
        throw new Error(`Migration broke ${violations.length} foreign key reference(s); rolled back`);
      }
      return names(applied);
    });
  } finally {
    await connection.execute('pragma foreign_keys = on');
  }
}

function names(migrations: { name: string }[]): string[] {
  return migrations.map((migration) => migration.name);
}

/**
 * The database kind, for src/db/ and the operator's commands (scripts/db-migrate.ts names its
 * target). The service asks ./dialect.ts and ./transactions.ts what differs, never the kind.
 */
function databaseKind(orm: Orm): DatabaseKind {
  return databaseKindOf(orm.em.getPlatform());
}

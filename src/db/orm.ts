import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { MikroORM, Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { type AbstractSqlDriver, type SqlEntityManager, MikroORM as SqlMikroORM } from '@mikro-orm/sql';
import { SqliteDriver } from '@mikro-orm/sqlite';
import { entities } from './entities/index.ts';
import { migrationsList } from './migrations/index.ts';
import { type DatabaseKind, databaseKindOf } from './platform.ts';
import { closeReadStatements } from './read-statements.ts';

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
 */
const SQLITE_PRAGMAS = [
  'pragma journal_mode = wal',
  'pragma synchronous = normal',
  'pragma wal_autocheckpoint = 10000',
  'pragma foreign_keys = on',
  'pragma busy_timeout = 5000',
];

/** Arbitrary, fixed: the advisory lock that serializes migrations across instances on PostgreSQL. */
const MIGRATION_LOCK_KEY = 7_301_944_120;

/** What Kysely hands to `onCreateConnection` (its own type is not a dependency of ours). */
interface KyselyConnection {
  executeQuery(query: { sql: string; parameters: readonly unknown[] }): Promise<unknown>;
}

/** Opens the database (connecting, not migrating) with every entity registered. */
export async function openDatabase(options: DatabaseOptions): Promise<Orm> {
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
    // Database functions are written by hand in migrations (gats_apply_transfer, see
    // migrations/Migration20261122043000_apply_transfer_function.ts), not declared to the ORM: the
    // schema diff (tests, db:migration:create) must not offer to drop them.
    schemaGenerator: { ignoreRoutines: true },
  } satisfies Partial<Options>;
  if (options.databaseUrl) {
    if (!/^postgres(ql)?:\/\//.test(options.databaseUrl)) {
      throw new Error('DATABASE_URL must be a postgres:// or postgresql:// URL');
    }
    if (options.poolMax !== undefined && options.poolMax < 2) {
      throw new Error('The PostgreSQL pool needs at least 2 connections (see migrate)');
    }
    return await SqlMikroORM.init<AbstractSqlDriver, SqlEntityManager<AbstractSqlDriver>>({
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: options.databaseUrl,
      pool: { max: options.poolMax ?? 10 },
    });
  }
  const sqlitePath = resolve(options.sqlitePath);
  mkdirSync(dirname(sqlitePath), { recursive: true });
  return await SqlMikroORM.init<AbstractSqlDriver, SqlEntityManager<AbstractSqlDriver>>({
    ...common,
    driver: SqliteDriver,
    dbName: sqlitePath,
    onCreateConnection: async (connection) => {
      for (const sql of SQLITE_PRAGMAS) {
        await (connection as KyselyConnection).executeQuery({ sql, parameters: [] });
      }
    },
  });
}

/**
 * Applies the committed migrations that have not run yet, all or nothing; returns their names (none
 * when up to date). Run it before serving requests.
 */
export async function migrate(orm: Orm): Promise<string[]> {
  const connection = orm.em.getConnection();
  if (databaseKind(orm) === 'postgresql') {
    // Instances started together must not migrate twice: the first takes the lock and migrates, the
    // others wait for its commit and then find nothing pending. (The migrator's own bookkeeping runs
    // on a second pooled connection, so the pool needs at least two.)
    return connection.transactional(async (transaction) => {
      await connection.execute('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY], 'all', transaction);
      return names(await orm.migrator.up({ transaction }));
    });
  }
  // SQLite alters most things by rebuilding the table (copy, drop, rename), and dropping a table
  // that other rows reference fails while foreign keys are enforced. SQLite's documented procedure:
  // turn enforcement off outside the transaction, then check every reference before committing.
  await orm.migrator.getPending(); // creates the migrations table outside the transaction below
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

export async function closeDatabase(orm: Orm): Promise<void> {
  closeReadStatements(orm);
  await orm.close(true);
}

export function databaseKind(orm: Orm): DatabaseKind {
  return databaseKindOf(orm.em.getPlatform());
}

/**
 * PostgreSQL needs explicit row locks for read-modify-write (`em.findOne(E, id, { lockMode:
 * LockMode.PESSIMISTIC_WRITE })` inside `em.transactional`); SQLite has one writer at a time.
 */
export function isPostgres(orm: Orm): boolean {
  return databaseKind(orm) === 'postgresql';
}

import { copyFileSync } from 'node:fs';
import { openDatabase } from '../../src/db/database.ts';
import { migrate } from '../../src/db/orm.ts';
import {
  createScratchDatabase,
  DEFAULT_POSTGRES_SERVER_URL,
  dropDatabasesLike,
  postgresAnswers,
  type ScratchDatabase,
} from '../../src/db/scratch-database.ts';

export type TestDatabaseKind = 'sqlite' | 'postgres';

/**
 * The databases the integration tests run on: `TEST_DB=sqlite` or `TEST_DB=postgres` picks one;
 * `TEST_DB=both` (CI) requires both; unset, both when PostgreSQL answers at TEST_POSTGRES_URL
 * (default the local server), else SQLite.
 */
export const DB_KINDS: TestDatabaseKind[] = await resolveKinds(process.env.TEST_DB);

async function resolveKinds(requested: string | undefined): Promise<TestDatabaseKind[]> {
  if (requested === 'sqlite' || requested === 'postgres') {
    return [requested];
  }
  if (requested === 'both') {
    if (!(await postgresAnswers(postgresServerUrl()))) {
      throw new Error(`TEST_DB=both but PostgreSQL does not answer at ${postgresServerUrl()}`);
    }
    return ['sqlite', 'postgres'];
  }
  if (requested) {
    throw new Error(`TEST_DB must be "sqlite", "postgres" or "both", not "${requested}"`);
  }
  return (await postgresAnswers(postgresServerUrl())) ? ['sqlite', 'postgres'] : ['sqlite'];
}

/**
 * An empty database of the given kind, ready for `openDatabase(db)` and `migrate`: a temp SQLite
 * file, or a `gats_test_<random>` PostgreSQL database. Call `drop()` when done. Tests of migrations
 * use it; the others take `migratedDatabase`.
 */
export async function freshDatabase(kind: TestDatabaseKind): Promise<ScratchDatabase> {
  return createScratchDatabase(kind === 'postgres' ? 'postgresql' : 'sqlite', {
    prefix: 'gats_test',
    postgresServerUrl: postgresServerUrl(),
  });
}

/** Where test/global-setup.ts left the migrated templates of this run (environment of the workers). */
export const TEMPLATE_ENV = { sqlite: 'GATS_TEST_SQLITE_TEMPLATE', postgres: 'GATS_TEST_POSTGRES_TEMPLATE' };

/**
 * A database of the given kind with every migration applied, as the app's start-up would leave it
 * before it writes anything: a copy of the run's template (test/global-setup.ts migrates it once),
 * so a test does not pay for the migrations again (~1 s on PostgreSQL, ~60 ms on SQLite). Without a
 * template (a file run outside vitest's global set-up), an empty database: the app migrates it.
 */
export async function migratedDatabase(kind: TestDatabaseKind): Promise<ScratchDatabase> {
  const template = process.env[TEMPLATE_ENV[kind]];
  const run = process.env[RUN_ENV];
  if (!template || !run) return freshDatabase(kind);
  if (kind === 'sqlite') {
    return createScratchDatabase('sqlite', {
      prefix: 'gats_test',
      copyFrom: (path: string) => copyFileSync(template, path),
    });
  }
  const database = await createScratchDatabase('postgresql', {
    prefix: `gats_test_${run}`,
    postgresServerUrl: postgresServerUrl(),
    postgresTemplate: template,
    // A commit waits for PostgreSQL to write its WAL, not to fsync it (~6 ms a commit on this
    // machine's disk, thousands per run). Nothing a test checks changes: what a commit made is
    // visible at once either way; only a crash of PostgreSQL itself, which no test does, could
    // lose the last commits. The service's own default stays on.
    settings: { synchronous_commit: 'off' },
  });
  // Dropping takes 0.3-0.6 s that no test needs to wait for: it goes on in the background, and the
  // run's teardown drops what a worker that exited first left behind (`dropRunDatabases`).
  return { ...database, drop: async () => void database.drop().catch(() => {}) };
}

/** The run's id (test/global-setup.ts): its PostgreSQL databases are named `gats_test_<run>_...`. */
export const RUN_ENV = 'GATS_TEST_RUN';

/** Drops the PostgreSQL databases `migratedDatabase` made in the run and left behind. */
export async function dropRunDatabases(run: string): Promise<void> {
  await dropDatabasesLike(`gats_test_${run}_%`, postgresServerUrl());
}

/**
 * Makes a migrated template of the kind for the run: a database (PostgreSQL) or a file (SQLite) named
 * in the returned environment variable. Its `drop()` removes it.
 */
export async function createTemplate(kind: TestDatabaseKind): Promise<ScratchDatabase> {
  const database = await createScratchDatabase(kind === 'postgres' ? 'postgresql' : 'sqlite', {
    prefix: 'gats_template',
    postgresServerUrl: postgresServerUrl(),
  });
  try {
    const opened = await openDatabase({ databaseUrl: database.databaseUrl, sqlitePath: database.sqlitePath });
    const orm = opened.orm;
    try {
      await migrate(orm);
    } finally {
      await opened.close();
    }
  } catch (error) {
    await database.drop();
    throw error;
  }
  return database;
}

function postgresServerUrl(): string {
  return process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_SERVER_URL;
}

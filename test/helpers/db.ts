import {
  createScratchDatabase,
  DEFAULT_POSTGRES_SERVER_URL,
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
 * file, or a `gats_test_<random>` PostgreSQL database. Call `drop()` when done.
 */
export async function freshDatabase(kind: TestDatabaseKind): Promise<ScratchDatabase> {
  return createScratchDatabase(kind === 'postgres' ? 'postgresql' : 'sqlite', {
    prefix: 'gats_test',
    postgresServerUrl: postgresServerUrl(),
  });
}

function postgresServerUrl(): string {
  return process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_SERVER_URL;
}

import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MikroORM } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import type { DatabaseKind } from './platform.ts';

/** The local PostgreSQL server's maintenance database, where scratch databases are created from. */
export const DEFAULT_POSTGRES_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** A throw-away, empty database: pass its fields to `openDatabase`, then `drop()` it. */
export interface ScratchDatabase {
  databaseUrl?: string;
  sqlitePath: string;
  drop(): Promise<void>;
}

/**
 * Creates an empty database for tests and for generating migrations: a fresh SQLite file in the
 * temp directory, or `CREATE DATABASE <prefix>_<random>` on a PostgreSQL server.
 */
export async function createScratchDatabase(
  kind: DatabaseKind,
  options: {
    prefix: string;
    postgresServerUrl?: string;
    /** PostgreSQL: the database to copy (`CREATE DATABASE ... TEMPLATE`); none is connected to it. */
    postgresTemplate?: string;
    /** SQLite: writes the new file's first contents (a copy of a template file). */
    copyFrom?: (sqlitePath: string) => void;
    /** PostgreSQL: settings of the new database for every session on it (`ALTER DATABASE ... SET`). */
    settings?: Record<string, string>;
  },
): Promise<ScratchDatabase> {
  const name = `${options.prefix}_${randomBytes(6).toString('hex')}`;
  const sqlitePath = join(tmpdir(), `${name}.sqlite`);
  if (kind === 'sqlite') {
    options.copyFrom?.(sqlitePath);
    return {
      sqlitePath,
      drop: async () => {
        await Promise.all(
          ['', '-wal', '-shm'].map((suffix) => rm(`${sqlitePath}${suffix}`, { force: true })),
        );
      },
    };
  }
  const serverUrl = new URL(options.postgresServerUrl ?? DEFAULT_POSTGRES_SERVER_URL);
  const admin = await connectPostgresAdmin(serverUrl.href);
  try {
    const template = options.postgresTemplate ? ` template "${options.postgresTemplate}"` : '';
    await admin.em.getConnection().execute(`create database "${name}"${template}`);
    for (const [setting, value] of Object.entries(options.settings ?? {}))
      await admin.em.getConnection().execute(`alter database "${name}" set ${setting} = '${value}'`);
  } catch (error) {
    await admin.close(true);
    throw error;
  }
  const databaseUrl = new URL(serverUrl.href);
  databaseUrl.pathname = `/${name}`;
  return {
    databaseUrl: databaseUrl.href,
    sqlitePath,
    drop: async () => {
      try {
        // FORCE ends sessions a test left open, so a failed test cannot leak its database.
        await admin.em.getConnection().execute(`drop database if exists "${name}" with (force)`);
      } finally {
        await admin.close(true);
      }
    },
  };
}

/** Drops every database whose name is LIKE `pattern` (the scratch databases of one test run). */
export async function dropDatabasesLike(
  pattern: string,
  serverUrl = DEFAULT_POSTGRES_SERVER_URL,
): Promise<void> {
  const admin = await connectPostgresAdmin(serverUrl);
  try {
    const connection = admin.em.getConnection();
    const rows = await connection.execute<{ datname: string }[]>(
      'select datname from pg_database where datname like ?',
      [pattern],
    );
    for (const { datname } of rows)
      await connection.execute(`drop database if exists "${datname}" with (force)`);
  } finally {
    await admin.close(true);
  }
}

/** Whether a PostgreSQL server answers at the URL (used to decide which databases tests run on). */
export async function postgresAnswers(serverUrl = DEFAULT_POSTGRES_SERVER_URL): Promise<boolean> {
  try {
    const admin = await connectPostgresAdmin(serverUrl);
    try {
      await admin.em.getConnection().execute('select 1');
      return true;
    } finally {
      await admin.close(true);
    }
  } catch {
    return false;
  }
}

async function connectPostgresAdmin(serverUrl: string): Promise<MikroORM> {
  return MikroORM.init({
    driver: PostgreSqlDriver,
    clientUrl: serverUrl,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    ensureDatabase: false,
    pool: { min: 0, max: 1 },
    // An unreachable server should answer "no" quickly, not hang the test run.
    driverOptions: { connectionTimeoutMillis: 3000 },
  });
}

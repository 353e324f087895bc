// A fresh, empty database per service start (a SQLite file in a temp directory, or a new PostgreSQL
// database on the local server, dropped afterwards), and the one write the benchmarks make behind the
// API's back: a user's role. Registration always gives `player` and only an admin may change roles
// through the API, so the benchmarks set `users.role` directly, then log in again for a token that
// carries the new role.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deferCleanup } from './cleanup.ts';
import { BetterSqlite3, pg } from './untyped.ts';

export type DbKind = 'sqlite' | 'postgres';
export type Role = 'player' | 'studio' | 'oracle' | 'admin';

let postgresServerUrl = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** The PostgreSQL server the next databases are made on (a benchmark's own server, say). */
export function usePostgresServer(url: string): void {
  postgresServerUrl = url;
}

export interface BenchDatabase {
  /** DATA_DIR, SQLITE_PATH and (PostgreSQL) DATABASE_URL for the service. */
  env: Record<string, string>;
  setRole(userId: string, role: Role): Promise<void>;
  /** Runs SQL written for this database kind (a bulk insert of test data, say) in one transaction. */
  execute(sql: string): Promise<void>;
  /** The number `sql` (one row, one column `n`) answers, read behind the service's back. */
  count(sql: string): Promise<number>;
  /** The rows `sql` answers, read behind the service's back (column values as the driver gives them). */
  rows(sql: string): Promise<Record<string, unknown>[]>;
  drop(): Promise<void>;
}

export async function createDatabase(kind: DbKind): Promise<BenchDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gats-bench-'));
  const removeDir = deferCleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  const sqlitePath = path.join(dataDir, 'gats.sqlite');
  if (kind === 'sqlite') {
    return {
      env: { DATA_DIR: dataDir, SQLITE_PATH: sqlitePath },
      async setRole(userId, role) {
        // The service holds the file open in WAL mode; a second connection may write between its
        // transactions (the timeout waits out a busy writer).
        const db = new BetterSqlite3(sqlitePath, { timeout: 5000 });
        try {
          const { changes } = db.prepare('update users set role = ? where id = ?').run(role, userId);
          if (changes !== 1) throw new Error(`no user ${userId} to make ${role}`);
        } finally {
          db.close();
        }
      },
      async execute(sql) {
        const db = new BetterSqlite3(sqlitePath, { timeout: 5000 });
        try {
          db.exec(`begin immediate; ${sql}; commit`);
        } finally {
          db.close();
        }
      },
      async count(sql) {
        const db = new BetterSqlite3(sqlitePath, { timeout: 5000 });
        try {
          return Number(db.prepare(sql).get()?.n ?? 0);
        } finally {
          db.close();
        }
      },
      async rows(sql) {
        const db = new BetterSqlite3(sqlitePath, { timeout: 5000 });
        try {
          return db.prepare(sql).all();
        } finally {
          db.close();
        }
      },
      drop: removeDir,
    };
  }

  const name = `gats_bench_${randomBytes(6).toString('hex')}`;
  const serverUrl = postgresServerUrl;
  await withPostgres(serverUrl, (client) => client.query(`create database "${name}"`));
  const dropDatabase = deferCleanup(async () => {
    // FORCE ends the service's sessions if it was killed rather than stopped.
    await withPostgres(serverUrl, (client) => client.query(`drop database if exists "${name}" with (force)`));
  });
  const databaseUrl = new URL(serverUrl);
  databaseUrl.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, SQLITE_PATH: sqlitePath, DATABASE_URL: databaseUrl.href },
    async setRole(userId, role) {
      const { rowCount } = await withPostgres(databaseUrl.href, (client) =>
        client.query('update users set role = $1 where id = $2', [role, userId]),
      );
      if (rowCount !== 1) throw new Error(`no user ${userId} to make ${role}`);
    },
    async execute(sql) {
      await withPostgres(databaseUrl.href, (client) => client.query(sql));
    },
    async count(sql) {
      const { rows } = await withPostgres(databaseUrl.href, (client) => client.query(sql));
      return Number(rows[0]?.n ?? 0);
    },
    async rows(sql) {
      const { rows } = await withPostgres(databaseUrl.href, (client) => client.query(sql));
      return rows;
    },
    async drop() {
      await dropDatabase();
      await removeDir();
    },
  };
}

async function withPostgres<T>(
  url: string,
  work: (client: InstanceType<typeof pg.Client>) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

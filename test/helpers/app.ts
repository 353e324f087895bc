// Boots the real app in-process on a fresh database (SQLite file or PostgreSQL database) behind a real
// HTTP server on a free port, and gives tests an HTTP client that checks every response against the
// contract.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type AppInstance, buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config/index.ts';
import type { Logger } from '../../src/observability/logger.ts';
import { assertMatchesContract } from './contract.ts';
import { DB_KINDS, migratedDatabase } from './db.ts';
import { testPasswordHasher } from './fixture-passwords.ts';

export { DB_KINDS };
export type DbKind = 'sqlite' | 'postgres';

/** A test app's close taking this long is reported (with where it waits) before its hook times out. */
const CLOSE_WARNING_MS = 20_000;

/** Whether `promise` settles within `ms` (it is left running either way). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = promise.then(
    () => true as const,
    () => true as const,
  );
  const result = await Promise.race([settled, late]);
  clearTimeout(timer);
  return result;
}

/** What PostgreSQL's sessions on the database of `url` are doing (psql; a diagnostic only). */
function sessionsOf(url: string): string {
  const name = new URL(url).pathname.slice(1);
  const server = new URL(url);
  server.pathname = '/postgres';
  const sql =
    "select string_agg(format('pid %s %s %s/%s for %s s: %s', pid, state, wait_event_type, wait_event, " +
    "round(extract(epoch from now() - coalesce(xact_start, query_start))), left(query, 160)), ' | ') " +
    `from pg_stat_activity where datname = '${name}'`;
  try {
    return execFileSync('psql', [server.href, '-Atc', sql], { encoding: 'utf8', timeout: 5_000 }).trim();
  } catch (error) {
    return `(psql failed: ${(error as Error).message})`;
  }
}

export const TEST_SECRET_KEY = 'test-secret-key-0123456789abcdef-not-for-production';

export interface HttpOptions {
  body?: unknown;
  /** Sent as application/x-www-form-urlencoded. */
  form?: Record<string, string>;
  /** Sent as is, with the given content type header. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** Skip the contract check (only for requests that deliberately leave the contract, e.g. HTML pages). */
  unchecked?: boolean;
}

export interface HttpResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestApp {
  kind: DbKind;
  baseUrl: string;
  app: AppInstance;
  server: Server;
  http<T = any>(method: string, path: string, options?: HttpOptions): Promise<HttpResponse<T>>;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Run on this existing PostgreSQL database (another instance's) and leave it in place on close. */
  databaseUrl?: string;
  /** The app's logger (default: the configuration's level on stdout). */
  logger?: Logger;
  /** Registrations hash at the service's cost, not a test's (test/helpers/fixture-passwords.ts). */
  servicePasswords?: boolean;
}

/** The configuration of an app under test: loopback port, its own data dir and database, quiet logs. */
export function testConfig(
  port: number,
  dataDir: string,
  database: { databaseUrl?: string; sqlitePath: string },
  env: Record<string, string> = {},
): Config {
  return loadConfig({
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    SQLITE_PATH: database.sqlitePath,
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SEED_DEMO: 'never',
    // Tests run several instances, each with its own port in PUBLIC_URL, on one database.
    PUBLIC_URL_CHANGE: 'allow',
    ...env,
  });
}

export async function startTestApp(
  kind: DbKind,
  env: Record<string, string> = {},
  options: StartOptions = {},
): Promise<TestApp> {
  const database = options.databaseUrl
    ? { databaseUrl: options.databaseUrl, sqlitePath: '', drop: async () => {} }
    : await migratedDatabase(kind);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gats-test-'));
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  const config = testConfig(port, dataDir, database, env);
  let app: AppInstance;
  try {
    app = await buildApp(config, {
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.servicePasswords ? {} : { passwordHasher: testPasswordHasher }),
    });
  } catch (error) {
    server.close();
    await database.drop();
    throw error;
  }
  server.on('request', app.koa.callback());
  app.attach(server);

  async function http<T>(
    method: string,
    urlPath: string,
    options: HttpOptions = {},
  ): Promise<HttpResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | Buffer | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    } else if (options.form) {
      body = new URLSearchParams(options.form).toString();
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    } else if (options.raw !== undefined) {
      body = options.raw;
    }
    const response = await fetch(baseUrl + urlPath, { method, headers, body, redirect: 'manual' });
    const text = await response.text();
    const contentType = response.headers.get('content-type') ?? '';
    let parsed: unknown = text;
    if (/json/.test(contentType) && text !== '') parsed = JSON.parse(text);
    if (text === '') parsed = undefined;
    if (!options.unchecked) {
      const pathOnly = urlPath.split('?')[0];
      assertMatchesContract(
        method,
        pathOnly,
        { status: response.status, contentType, body: parsed, headers: response.headers },
        app.router.implemented,
      );
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  return {
    kind,
    baseUrl,
    app,
    server,
    http,
    async close() {
      await app.drain();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const closed = app.close();
      if (!(await settlesWithin(closed, CLOSE_WARNING_MS))) {
        // Rare under a loaded suite (two CI runs in about ten): the app's close waits for one of its
        // PostgreSQL pool's connections, so the pool's end never comes. Say where it waits and what
        // the server says that connection does, then drop the database (its connections are ended
        // with it) and go on; the hook then passes or fails on what the test checked.
        const resources = process.getActiveResourcesInfo().join(', ');
        console.error(
          `the ${kind} test app's close waits for ${app.closing()} (${resources})` +
            (database.databaseUrl ? `; its database's sessions: ${sessionsOf(database.databaseUrl)}` : ''),
        );
        await database.drop();
        const ended = await settlesWithin(closed, CLOSE_WARNING_MS);
        console.error(`after the drop, the close ${ended ? 'ended' : 'still waits'}`);
        // A close that ended by failing fails the hook, as it does without the wait.
        if (ended) await closed;
      } else {
        await closed;
        await database.drop();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

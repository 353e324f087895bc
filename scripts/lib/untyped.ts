// The three packages the benchmarks use that ship no TypeScript types: loaded through `require`
// and typed here with only the members the benchmarks call, so no ambient module declaration can
// clash with type packages added later.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** A subset of autocannon 9's options (https://github.com/mcollina/autocannon#api). */
export interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Called once per connection, before its first request. */
  setupClient?: (client: AutocannonClient) => void;
}

export interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Called before every request; returns the request to send. */
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
}

export interface AutocannonClient {
  setRequests(requests: AutocannonRequest[]): void;
}

interface Histogram {
  average: number;
  p50: number;
  p99: number;
}

export interface AutocannonResult {
  duration: number;
  latency: Histogram;
  requests: Histogram & { total: number };
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}

export const autocannon = require('autocannon') as (options: AutocannonOptions) => Promise<AutocannonResult>;

export interface PgClient {
  connect(): Promise<void>;
  query(
    text: string,
    values?: unknown[],
  ): Promise<{ rowCount: number | null; rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}

export const pg = require('pg') as { Client: new (config: { connectionString: string }) => PgClient };

export interface SqliteDatabase {
  prepare(sql: string): {
    run(...parameters: unknown[]): { changes: number };
    get(...parameters: unknown[]): Record<string, unknown> | undefined;
    all(...parameters: unknown[]): Record<string, unknown>[];
  };
  exec(sql: string): void;
  close(): void;
}

export const BetterSqlite3 = require('better-sqlite3') as new (
  filename: string,
  options?: { timeout?: number },
) => SqliteDatabase;

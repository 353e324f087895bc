// The service under test, started as `node src/server.ts` in its own process on a fresh database,
// with limits that would otherwise throttle the load (rate limits, connections per API key) raised.
import { randomBytes } from 'node:crypto';
import { type Child, freePort, startNodeChild } from './children.ts';
import { type BenchDatabase, createDatabase, type DbKind, type Role } from './database.ts';

export interface Service extends Child {
  kind: DbKind;
  /** The environment the service was started with (to build the same app in-process). */
  env: Record<string, string>;
  setRole(userId: string, role: Role): Promise<void>;
  /** Runs SQL on the service's database behind its back (bulk test data). */
  execute(sql: string): Promise<void>;
  /** The number `sql` (one row, one column `n`) answers on the service's database. */
  count(sql: string): Promise<number>;
  /** Stops the process but keeps its database (`stop` drops it too). */
  stopProcess(): Promise<void>;
  /**
   * Stops the process and starts a new one on the same database and port (`pid` becomes the new
   * process's); resolves with the milliseconds from the spawn to its first 200 on /healthz.
   */
  restart?(): Promise<number>;
}

/**
 * The environment of a service under load: its database, a fixed port and secret, quiet logs, and
 * limits raised out of the load's reach. Shared by the benchmarks and the crash test.
 */
export function serviceEnv(databaseEnv: Record<string, string>, port: number): Record<string, string> {
  return {
    ...databaseEnv,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    SECRET_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'warn',
    SEED_DEMO: 'never',
    // The configuration caps these at 1,000,000 and 100,000: a 1 s window makes that a million
    // requests per second per API key, far above anything this load reaches.
    RATE_LIMIT_REQUESTS: '1000000',
    RATE_LIMIT_USER_REQUESTS: '1000000',
    RATE_LIMIT_WINDOW_SECONDS: '1',
    LOGIN_RATE_LIMIT_REQUESTS: '100000',
    // A token must outlive the run: an expired one ends WebSocket connections (close code 4001).
    ACCESS_TOKEN_TTL_SECONDS: '3600',
    // All fan-out clients share one API key and one user.
    WS_MAX_CONNECTIONS_PER_KEY: '100000',
    WS_MAX_CONNECTIONS_PER_USER: '100000',
  };
}

/** `extraEnv`: settings of the benchmark (e.g. webhooks to loopback receivers). */
export async function startService(kind: DbKind, extraEnv: Record<string, string> = {}): Promise<Service> {
  const database: BenchDatabase = await createDatabase(kind);
  const port = await freePort();
  const env = { ...serviceEnv(database.env, port), ...extraEnv };
  // To profile the service under a benchmark: BENCH_SERVICE_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/p'.
  if (process.env.BENCH_SERVICE_NODE_OPTIONS) env.NODE_OPTIONS = process.env.BENCH_SERVICE_NODE_OPTIONS;
  let child: Child;
  try {
    child = await startNodeChild({
      name: `service (${kind})`,
      script: 'src/server.ts',
      port,
      env,
      readyPath: '/healthz',
    });
  } catch (error) {
    await database.drop();
    throw error;
  }
  const service: Service = {
    ...child,
    kind,
    env,
    setRole: (userId, role) => database.setRole(userId, role),
    execute: (sql) => database.execute(sql),
    count: (sql) => database.count(sql),
    stopProcess: () => child.stop(),
    async restart() {
      await child.stop();
      const started = performance.now();
      child = await startNodeChild({
        name: `service (${kind})`,
        script: 'src/server.ts',
        port,
        env,
        readyPath: '/healthz',
      });
      service.pid = child.pid;
      return performance.now() - started;
    },
    async stop() {
      await child.stop();
      await database.drop();
    },
  };
  return service;
}

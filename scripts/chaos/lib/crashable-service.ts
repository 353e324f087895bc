// The service as a child process that can be killed with SIGKILL and started again on the same
// database, port, SECRET_KEY and DATA_DIR: what a crash and a supervisor's restart look like to
// clients. Built from the benchmark helpers (fresh database, child process start).
import type { Child } from '../../lib/children.ts';
import { freePort, startNodeChild } from '../../lib/children.ts';
import { createDatabase, type DbKind } from '../../lib/database.ts';
import { type Service, serviceEnv } from '../../lib/service.ts';

export interface CrashableService extends Service {
  /** Resolves when the service answers (at once while it runs, after the restart while it is down). */
  whenUp(): Promise<void>;
  /** SIGKILL: no drain, no flush, connections reset. */
  kill9(): Promise<void>;
  /** Starts the process again with the same environment; returns how long it took to answer. */
  restart(): Promise<number>;
  /** How many times the process was started (1 + restarts). */
  starts: number;
}

/** A crashable service on a database of this machine, whose rows the checks read behind its back. */
export interface LocalCrashableService extends CrashableService {
  /** The rows `sql` answers on the service's database. */
  rows(sql: string): Promise<Record<string, unknown>[]>;
}

export async function startCrashableService(
  kind: DbKind,
  extraEnv: Record<string, string> = {},
): Promise<LocalCrashableService> {
  const database = await createDatabase(kind);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { ...serviceEnv(database.env, port), ...extraEnv };
  const launch = () =>
    startNodeChild({ name: `service (${kind})`, script: 'src/server.ts', port, env, readyPath: '/healthz' });

  let child: Child;
  try {
    child = await launch();
  } catch (error) {
    await database.drop();
    throw error;
  }
  let up: Promise<void> = Promise.resolve();
  let markUp = () => {};

  const service: LocalCrashableService = {
    name: `service (${kind})`,
    kind,
    env,
    baseUrl,
    starts: 1,
    get pid() {
      return child.pid;
    },
    setRole: (userId, role) => database.setRole(userId, role),
    execute: (sql) => database.execute(sql),
    count: (sql) => database.count(sql),
    rows: (sql) => database.rows(sql),
    whenUp: () => up,
    async kill9() {
      up = new Promise<void>((resolve) => {
        markUp = resolve;
      });
      process.kill(child.pid, 'SIGKILL');
      // `stop` of a killed child only waits for its exit (and unregisters its cleanup step).
      await child.stop();
    },
    async restart() {
      const started = Date.now();
      child = await launch();
      service.starts++;
      markUp();
      return Date.now() - started;
    },
    stopProcess: () => child.stop(),
    async stop() {
      await child.stop();
      await database.drop();
    },
  };
  return service;
}

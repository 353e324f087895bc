// The service as a child process (src/server.ts), for what only a process shows: exit codes,
// start-up lines, signals.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/lib/children.ts';
import { spawnService as spawnServiceProcess } from '../../scripts/lib/service-process.ts';
import { TEST_SECRET_KEY } from '../helpers/app.ts';

export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  baseUrl: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Resolves once /healthz answers (rejects if the process exits first). */
  ready(timeoutMs?: number): Promise<void>;
}

/** The service with the faults tests' defaults (a temp DATA_DIR, the test secret, info logs). */
export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const dataDir = env.DATA_DIR ?? mkdtempSync(path.join(tmpdir(), 'gats-faults-'));
  const service = spawnServiceProcess({
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    SECRET_KEY: TEST_SECRET_KEY,
    SEED_DEMO: 'never',
    LOG_LEVEL: 'info',
    // Each start has its own port in PUBLIC_URL (the 14.6 check has its own test).
    PUBLIC_URL_CHANGE: 'allow',
    ...env,
  });
  // The temporary data directory goes with the process (each run of the suite left about 20 of them,
  // a database in each); a caller that names its own DATA_DIR keeps it.
  if (env.DATA_DIR === undefined)
    void service.exited
      .then(() => rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 }))
      .catch((error: unknown) => console.warn(`${dataDir} left behind: ${String(error)}`));
  return {
    child: service.child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: service.stdout,
    stderr: service.stderr,
    exited: service.exited,
    ready: (timeoutMs = 30_000) => service.ready(port, timeoutMs),
  };
}

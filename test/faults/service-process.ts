// The service as a child process (src/server.ts), for what only a process shows: exit codes,
// start-up lines, signals.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, NODE, ROOT } from '../../scripts/bench/lib/children.ts';
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

export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(NODE, ['src/server.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'gats-faults-')),
      SECRET_KEY: TEST_SECRET_KEY,
      SEED_DEMO: 'never',
      LOG_LEVEL: 'info',
      // Each start has its own port in PUBLIC_URL (the 14.6 check has its own test).
      PUBLIC_URL_CHANGE: 'allow',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    err += chunk;
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    child,
    port,
    baseUrl,
    stdout: () => out,
    stderr: () => err,
    exited,
    async ready(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let gone = false;
      void exited.then(() => {
        gone = true;
      });
      while (Date.now() < deadline) {
        if (gone) throw new Error(`the service exited before it was ready: ${err}`);
        const ok = await fetch(`${baseUrl}/healthz`).then(
          (response) => response.ok,
          () => false,
        );
        if (ok) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error('the service did not become ready');
    },
  };
}

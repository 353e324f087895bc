// Starts the processes under test (the service, the Koa hello server) on free loopback ports, waits
// until they answer, and stops them.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { deferCleanup, trackChild } from './cleanup.ts';

export const ROOT = path.resolve(import.meta.dirname, '../../..');
/** The project's Node 24, as `npm start` uses it (a bare `node` may be the system's older one). */
export const NODE = path.join(ROOT, 'node_modules/.bin/node');

export interface Child {
  name: string;
  pid: number;
  baseUrl: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Runs `node <script>` with exactly `env` (plus PATH and HOME), its open-files limit raised to the hard
 * limit (10,000 WebSockets need 10,000 descriptors), and resolves once GET `readyPath` answers 200.
 */
export async function startNodeChild(options: {
  name: string;
  script: string;
  port: number;
  env: Record<string, string>;
  readyPath: string;
}): Promise<Child> {
  const baseUrl = `http://127.0.0.1:${options.port}`;
  // `exec` keeps the pid: the pid we get is the Node process whose memory and CPU we read.
  const child = spawn(
    'bash',
    ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"', 'bash', NODE, options.script],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  trackChild(child);
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(String(chunk));
    if (output.length > 50) output.shift();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const stop = deferCleanup(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  });

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(
        `${options.name} exited with code ${child.exitCode} before it was ready:\n${output.join('')}`,
      );
    }
    try {
      const response = await fetch(baseUrl + options.readyPath);
      await response.arrayBuffer();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${options.name} did not answer ${options.readyPath} within 60 s:\n${output.join('')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { name: options.name, pid: child.pid as number, baseUrl, stop };
}

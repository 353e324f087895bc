// The one way the tools and the tests start the service as a child process: `node src/server.ts`
// with the project's Node 24, exactly the environment given (plus PATH, HOME and NODE_COMPILE_CACHE),
// its open-files limit raised to the hard limit (10,000 WebSockets need 10,000 descriptors). It keeps what the process
// prints (and its JSON log lines) and says when it listens, answers /healthz, or exits. The
// benchmarks' `startService` (service.ts), the crash and outage tests, test/helpers/service.ts and
// test/faults/service-process.ts are built on it.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { trackChild } from './cleanup.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/** The project's Node 24, as `npm start` uses it (a bare `node` may be the system's older one). */
export const NODE = path.join(ROOT, 'node_modules/.bin/node');

/** What is kept of each output stream: its last megabyte (a long benchmark's warnings stay bounded). */
const KEPT_OUTPUT = 1 << 20;

export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  /** Everything printed so far (the last megabyte of each stream). */
  stdout(): string;
  stderr(): string;
  /** Every JSON log line so far. */
  // biome-ignore lint/suspicious/noExplicitAny: log lines are whatever the service logs
  logs: Record<string, any>[];
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Resolves with the port of the start-up log line's `listening` (rejects if the process exits first). */
  listening(timeoutMs?: number): Promise<number>;
  /** Resolves once GET `path` on `port` answers 200 (rejects if the process exits first). */
  ready(port: number, timeoutMs?: number, path?: string): Promise<void>;
  /** SIGTERM (unless it already exited), SIGKILL after `killAfterMs` (null: never); then the exit. */
  stop(killAfterMs?: number | null): Promise<number | string>;
}

/** `script`: the service unless a tool starts another Node server the same way (the Koa hello baseline). */
export function spawnService(env: Record<string, string>, script = 'src/server.ts'): ServiceProcess {
  // `exec` keeps the pid: the pid we get is the Node process whose memory, CPU and signals we handle.
  const child = spawn(
    'bash',
    ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"', 'bash', NODE, script],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        // The caller's compile cache (the test suite's, test/global-setup.ts), set from the process's
        // start: then src/server.ts itself comes from the cache too, and Node never loads its
        // TypeScript stripper (~0.15 CPU-s of each start).
        ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  trackChild(child);
  let out = '';
  let err = '';
  let partial = '';
  const logs: ServiceProcess['logs'] = [];
  let port: number | undefined;
  let heard = () => {};
  child.stdout.on('data', (chunk: Buffer) => {
    out = (out + chunk).slice(-KEPT_OUTPUT);
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line);
        logs.push(entry);
        // The start-up line names the listening address as host:port.
        if (typeof entry.listening === 'string' && port === undefined) {
          port = Number(entry.listening.split(':').pop());
          heard();
        }
      } catch {
        // not a log line
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err = (err + chunk).slice(-KEPT_OUTPUT);
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  let gone = false;
  void exited.then(() => {
    gone = true;
    heard();
  });
  const output = () => `${err}${out}`.slice(-4000);

  return {
    child,
    pid: child.pid as number,
    stdout: () => out,
    stderr: () => err,
    logs,
    exited,
    async listening(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (port === undefined) {
        if (gone) throw new Error(`the service exited (${await exited}) before listening:\n${output()}`);
        if (Date.now() > deadline)
          throw new Error(`the service did not listen within ${timeoutMs} ms:\n${output()}`);
        await new Promise<void>((resolve) => {
          heard = resolve;
          setTimeout(resolve, 100);
        });
      }
      return port;
    },
    async ready(readyPort, timeoutMs = 60_000, path = '/healthz') {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (gone) throw new Error(`the service exited (${await exited}) before it was ready:\n${output()}`);
        const ok = await fetch(`http://127.0.0.1:${readyPort}${path}`).then(
          async (response) => {
            await response.arrayBuffer();
            return response.ok;
          },
          () => false,
        );
        if (ok) return;
        if (Date.now() > deadline)
          throw new Error(`the service did not answer ${path} within ${timeoutMs} ms:\n${output()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop(killAfterMs: number | null = 10_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const killer = killAfterMs === null ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

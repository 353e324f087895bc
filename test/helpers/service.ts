// The service as an operator runs it: `node src/server.ts` in a child process with only the given
// environment, its JSON log lines collected, stopped with SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  /** Every JSON log line so far. */
  logs: Record<string, any>[];
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the service and resolves once it logs its listening address (rejects if it exits first). */
export async function startService(env: Record<string, string>, timeoutMs = 60_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['src/server.ts'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, any>[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = new Promise<number>((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as Record<string, any>;
        logs.push(entry);
        // The start-up line names the listening address as host:port.
        if (typeof entry.listening === 'string') resolve(Number(entry.listening.split(':').pop()));
      }
    });
    void exited.then((code) =>
      reject(new Error(`the service exited (${code}) before listening:\n${stderr}`)),
    );
    setTimeout(
      () => reject(new Error(`the service did not listen within ${timeoutMs} ms:\n${stderr}`)),
      timeoutMs,
    ).unref();
  });
  try {
    const port = await listening;
    return {
      child,
      port,
      logs,
      stop: async () => {
        if (child.exitCode === null) child.kill('SIGTERM');
        return exited;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

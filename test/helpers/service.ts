// The service as an operator runs it: `node src/server.ts` in a child process with only the given
// environment (scripts/lib/service-process.ts, the one way tools and tests start it), its JSON log
// lines collected, stopped with SIGTERM.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { spawnService } from '../../scripts/lib/service-process.ts';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  /** Every JSON log line so far. */
  logs: Record<string, any>[];
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | string>;
}

/** Starts the service and resolves once it logs its listening address (rejects if it exits first). */
export async function startService(env: Record<string, string>, timeoutMs = 60_000): Promise<ServiceProcess> {
  const service = spawnService({ LOG_LEVEL: 'info', ...env });
  try {
    const port = await service.listening(timeoutMs);
    return { child: service.child, port, logs: service.logs, stop: () => service.stop(null) };
  } catch (error) {
    service.child.kill('SIGKILL');
    throw error;
  }
}

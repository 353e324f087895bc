// Starts the processes under test (the service, the Koa hello server) on free loopback ports with
// spawnService (service-process.ts), waits until they answer, and stops them (registered with the
// cleanup steps, so that a benchmark interrupted stops them too).
import { createServer } from 'node:net';
import { deferCleanup } from './cleanup.ts';
import { spawnService } from './service-process.ts';

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
 * Runs `node <script>` with exactly `env` (plus PATH and HOME) and resolves once GET `readyPath`
 * answers 200 (within 60 s); `stop` sends SIGTERM, then SIGKILL after 10 s.
 */
export async function startNodeChild(options: {
  name: string;
  script: string;
  port: number;
  env: Record<string, string>;
  readyPath: string;
}): Promise<Child> {
  const started = spawnService(options.env, options.script);
  const stop = deferCleanup(async () => {
    await started.stop();
  });
  try {
    await started.ready(options.port, 60_000, options.readyPath);
  } catch (error) {
    await stop();
    throw new Error(`${options.name}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { name: options.name, pid: started.pid, baseUrl: `http://127.0.0.1:${options.port}`, stop };
}

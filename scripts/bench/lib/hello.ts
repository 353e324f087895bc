// Starts the Koa hello baseline (scripts/bench/hello-server.ts) in its own process.
import { type Child, freePort, startNodeChild } from '../../lib/children.ts';

export async function startHello(): Promise<Child> {
  const port = await freePort();
  return startNodeChild({
    name: 'Koa hello',
    script: 'scripts/bench/hello-server.ts',
    port,
    env: { PORT: String(port) },
    readyPath: '/',
  });
}

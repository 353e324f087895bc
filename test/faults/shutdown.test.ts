// Issue 14.4: SIGTERM always ends the process. In-flight requests are answered (with Connection:
// close, so keep-alive clients reconnect elsewhere), /readyz says 503 meanwhile, and a shutdown stuck
// on a dependency that never answers ends at SHUTDOWN_TIMEOUT_SECONDS with a non-zero exit code.
// The service runs as a child process on PostgreSQL through the fault proxy.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../scripts/chaos/lib/fault-proxy.ts';
import { DB_KINDS, migratedDatabase } from '../helpers/db.ts';
import { spawnService } from './service-process.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(DB_KINDS.includes('postgres'))('shutdown on SIGTERM', () => {
  let database: Awaited<ReturnType<typeof migratedDatabase>>;
  let pg: FaultProxy;
  beforeAll(async () => {
    database = await migratedDatabase('postgres');
    pg = await startFaultProxy({
      host: '127.0.0.1',
      port: Number(new URL(database.databaseUrl as string).port),
    });
  });
  afterAll(async () => {
    pg?.heal();
    await pg?.close();
    await database?.drop();
  });

  const register = (baseUrl: string) =>
    fetch(`${baseUrl}/api/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        username: `u${randomBytes(6).toString('hex')}`,
        password: 'correct horse battery staple',
      }),
    });

  it('14.4: a write in flight at SIGTERM is answered (Connection: close), new connections are refused, the process exits 0', async () => {
    const service = await spawnService({ DATABASE_URL: pg.via(database.databaseUrl as string) });
    await service.ready();
    expect((await register(service.baseUrl)).status).toBe(201);
    // The write reaches a database that stops answering: it is in flight when SIGTERM arrives.
    pg.pause();
    const inFlight = register(service.baseUrl);
    await sleep(300);
    service.child.kill('SIGTERM');
    await sleep(300);
    const refused = await fetch(`${service.baseUrl}/healthz`).then(
      () => 'answered',
      () => 'refused',
    );
    pg.heal();
    const answer = await inFlight;
    expect(answer.status).toBe(201);
    expect(answer.headers.get('connection')).toBe('close');
    expect(refused).toBe('refused');
    expect(await service.exited).toBe(0);
  }, 60_000);

  it('14.4: a shutdown stuck on a database that never answers ends at SHUTDOWN_TIMEOUT_SECONDS with exit code 70', async () => {
    const service = await spawnService({
      DATABASE_URL: pg.via(database.databaseUrl as string),
      // Past the drain's own 2 s limit (src/drain.ts), so the log names the request it waits for.
      SHUTDOWN_TIMEOUT_SECONDS: '4',
      SHUTDOWN_GRACE_MS: '10000',
    });
    await service.ready();
    pg.pause();
    void register(service.baseUrl).catch(() => undefined);
    await sleep(300);
    const signalled = Date.now();
    service.child.kill('SIGTERM');
    const code = await service.exited;
    const tookMs = Date.now() - signalled;
    pg.heal();
    console.log(`14.4 stuck shutdown ended after ${tookMs} ms with ${code}`);
    expect(code).toBe(70);
    expect(tookMs).toBeLessThan(8_000);
    expect(service.stdout()).toMatch(/shutdown took longer than SHUTDOWN_TIMEOUT_SECONDS/);
    // The log names what the shutdown waited for: the request on the paused database.
    expect(service.stdout()).toMatch(/"waitingFor":"requests"/);
  }, 60_000);
});

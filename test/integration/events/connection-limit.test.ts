// The cap on WebSocket connections per API key holds across instances that share Redis: two real
// instances on one PostgreSQL database count one key's connections together, and the share of an
// instance that dies without cleaning up (a process killed with SIGKILL) stops counting once its
// Redis counter expires.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.ts';
import { createRedisLink } from '../../../src/redis/link.ts';
import { redisConnectionLimiter } from '../../../src/ws/connection-limit.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { connect } from '../../helpers/ws.ts';
import { ok, openSocket, sleep, TEST_ENV, wsUrl } from './world.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const MAX = 3;
const MAX_PER_USER = 4;

/** The HTTP status of a refused handshake (throws if the handshake is accepted). */
async function refusal(url: string, headers: Record<string, string> = {}): Promise<number> {
  const socket = await connect(url, headers).catch((error: { status?: number }) => error);
  if (!('status' in socket)) throw new Error('the handshake was accepted');
  return socket.status as number;
}

describe.runIf(DB_KINDS.includes('postgres'))('connections per API key across instances', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    const env = {
      ...TEST_ENV,
      REDIS_URL,
      WS_MAX_CONNECTIONS_PER_KEY: String(MAX),
      WS_MAX_CONNECTIONS_PER_USER: String(MAX_PER_USER),
    };
    a = await startTestApp('postgres', env);
    b = await startTestApp('postgres', env, { databaseUrl: a.app.config.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('refuses with 429 the connection past the cap, wherever the others are open', async () => {
    // Users and keys live in the shared database; B is reached with tickets issued by A (tokens are
    // signed per instance in tests), which count against the same API key.
    const alice: HttpUser = await httpUser(a);
    const bob: HttpUser = await httpUser(a);
    const onB = async (user: HttpUser, channel = '/ws') => {
      const { ticket } = await ok(
        a.http('POST', '/api/v1/events/ws-ticket', { headers: user.headers, body: {} }),
      );
      return `${wsUrl(b, channel)}?ticket=${ticket}`;
    };
    const aliceOnA = await Promise.all([openSocket(a, alice), openSocket(a, alice)]);
    const aliceOnB = await connect(await onB(alice));
    expect(await refusal(await onB(alice))).toBe(429);
    expect(await refusal(await onB(alice, '/assets/subscribe'))).toBe(429);
    expect(await refusal(wsUrl(a), alice.headers)).toBe(429);
    // Another key has its own count.
    const bobs = await Promise.all([connect(await onB(bob)), openSocket(a, bob)]);

    // A connection closed on A makes room on B, and only one.
    aliceOnA[0].close();
    await aliceOnA[0].closed;
    let again: Awaited<ReturnType<typeof connect>> | null = null;
    for (let attempt = 0; attempt < 50 && !again; attempt++) {
      again = await connect(await onB(alice)).catch(() => null);
      if (!again) await sleep(20);
    }
    expect(again).not.toBeNull();
    expect(await refusal(wsUrl(a), alice.headers)).toBe(429);
    expect(await refusal(await onB(alice))).toBe(429);
    for (const socket of [aliceOnA[1], aliceOnB, again, ...bobs]) socket?.close();
  });

  it('13.5: refuses with 429 a user past its cap over all its keys, wherever the others are open', async () => {
    const carol: HttpUser = await httpUser(a);
    const bearer = { authorization: carol.headers.authorization };
    const second = await ok(
      a.http('POST', '/api/v1/api-keys', { headers: bearer, body: { name: 'second' } }),
    );
    const withSecond = { ...bearer, 'x-api-key': second.key };
    const onB = async (headers: Record<string, string>) => {
      const { ticket } = await ok(a.http('POST', '/api/v1/events/ws-ticket', { headers, body: {} }));
      return `${wsUrl(b)}?ticket=${ticket}`;
    };
    const firstKeyOnA = await Promise.all([openSocket(a, carol), openSocket(a, carol)]);
    const secondKeyOnB = [await connect(await onB(withSecond)), await connect(await onB(withSecond))];
    // Each key holds 2 of its 3; carol holds her 4.
    expect(await refusal(wsUrl(a), withSecond)).toBe(429);
    expect(await refusal(await onB(carol.headers))).toBe(429);
    secondKeyOnB[0].close();
    await secondKeyOnB[0].closed;
    let again: Awaited<ReturnType<typeof connect>> | null = null;
    for (let attempt = 0; attempt < 50 && !again; attempt++) {
      again = await connect(wsUrl(a), carol.headers).catch(() => null);
      if (!again) await sleep(20);
    }
    expect(again).not.toBeNull();
    expect(await refusal(await onB(withSecond))).toBe(429);
    for (const socket of [...firstKeyOnA, secondKeyOnB[1], again]) socket?.close();
  });

  it("stops counting a crashed instance's connections once its counter expires", async () => {
    const key = `test-${randomUUID()}`;
    // An instance that holds two connections of `key` and is then killed without any cleanup.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { redisConnectionLimiter } from ${JSON.stringify(path.resolve('src/ws/connection-limit.ts'))};
         import { createLogger } from ${JSON.stringify(path.resolve('src/observability/logger.ts'))};
         import { createRedisLink } from ${JSON.stringify(path.resolve('src/redis/link.ts'))};
         const link = createRedisLink(${JSON.stringify(REDIS_URL)}, 'gats:', createLogger('silent'));
         const limiter = redisConnectionLimiter(link, { refreshMs: 200, ttlSeconds: 1 });
         await link.ready(2000);
         const admitted = [await limiter.acquire(${JSON.stringify(key)}, ${MAX}), await limiter.acquire(${JSON.stringify(key)}, ${MAX})];
         console.log(JSON.stringify(admitted));
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (chunk: Buffer) => resolve(String(chunk).trim()));
        child.once('exit', (code) => reject(new Error(`the crashing instance exited early (${code})`)));
      });
      expect(JSON.parse(line)).toEqual([true, true]);

      const link = createRedisLink(REDIS_URL, 'gats:', createLogger('silent'));
      const survivor = redisConnectionLimiter(link, { refreshMs: 200, ttlSeconds: 1 });
      await link.ready(2_000);
      try {
        expect(await survivor.acquire(key, MAX)).toBe(true); // 2 + 1
        expect(await survivor.acquire(key, MAX)).toBe(false);
        // Past the counters' 1 s lifetime, the other instance's refreshes keep its share alive.
        await sleep(1500);
        expect(await survivor.acquire(key, MAX)).toBe(false);
        child.kill('SIGKILL');
        await exited;
        let admitted = false;
        const deadline = Date.now() + 3000;
        while (!admitted && Date.now() < deadline) {
          admitted = await survivor.acquire(key, MAX);
          if (!admitted) await sleep(100);
        }
        expect(admitted).toBe(true);
        expect(await survivor.acquire(key, MAX)).toBe(true);
        expect(await survivor.acquire(key, MAX)).toBe(false); // 3 of its own now
      } finally {
        await survivor.close();
        await link.close();
      }
    } finally {
      child.kill('SIGKILL');
    }
  });
});

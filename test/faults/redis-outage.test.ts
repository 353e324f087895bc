// Issue 14.2: Redis away is not the API away. Redis is cut (every connection reset, new ones
// refused) through the fault proxy during mixed traffic: API-key calls (rate limits), logins
// (throttles), WebSocket tickets and connections (per-key caps) keep working on per-instance
// fallbacks without a single 5xx or a slow answer, events still reach another instance (through
// PostgreSQL), /readyz and /metrics say Redis is degraded, and the shared counters are used again
// within seconds of Redis's return.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { connect, type TestSocket } from '../helpers/ws.ts';
import { type FaultWorld, REDIS_URL, startFaultWorld } from './world.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PASSWORD = 'correct horse battery staple';

function metric(text: string, name: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(name));
  return line ? Number(line.split(' ').at(-1)) : Number.NaN;
}

describe.runIf(DB_KINDS.includes('postgres'))('Redis outage (through the fault proxy)', () => {
  let w: FaultWorld;
  let b: TestApp;
  let direct: Redis;
  beforeAll(async () => {
    w = await startFaultWorld('postgres', { redis: true });
    // A second instance on the same database and Redis: it hears of A's events.
    b = await startTestApp('postgres', { ...w.env }, { databaseUrl: w.t.app.config.databaseUrl });
    direct = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    direct?.disconnect();
    await b?.close();
    await w?.close();
  });

  const ticketUrl = async (app: TestApp, issuer: TestApp = app) => {
    const issued = await issuer.http('POST', '/api/v1/events/ws-ticket', {
      headers: w.alice.headers,
      body: {},
    });
    expect(issued.status).toBe(201);
    return `${app.baseUrl.replace(/^http/, 'ws')}/ws?ticket=${issued.body.ticket}`;
  };

  it('14.2: mixed traffic sees no 5xx and no slow answer while Redis is away; events cross instances; shared counters resume', async () => {
    const redis = w.redis as NonNullable<FaultWorld['redis']>;
    // Subscribed on B before the outage (tickets are shared through Redis while it is up).
    const onB: TestSocket = await connect(await ticketUrl(b, w.t));
    onB.send({ type: 'subscribe', requestId: 'r1', events: ['newTransfer'], walletId: w.bob.wallet });
    expect((await onB.next((m) => m.requestId === 'r1')).type).toBe('subscribed');

    redis.refuse();
    const outageStarted = Date.now();
    const answers: { what: string; status: number; ms: number }[] = [];
    const timed = async (what: string, call: () => Promise<{ status: number }>) => {
      const started = Date.now();
      const { status } = await call();
      answers.push({ what, status, ms: Date.now() - started });
      return status;
    };
    const sockets: TestSocket[] = [];
    for (let round = 0; round < 5; round++) {
      await Promise.all([
        timed('read', () => w.t.http('GET', '/api/v1/me', { headers: w.alice.headers })),
        timed('transfer', () =>
          w.t.http('POST', '/api/v1/transfer', {
            body: { assetId: 'gold', from: w.alice.wallet, to: w.bob.wallet, amount: '1' },
            headers: w.alice.headers,
          }),
        ),
        timed('login', () =>
          w.t.http('POST', '/api/v1/auth/login', {
            body: { username: w.alice.username, password: PASSWORD },
          }),
        ),
        timed('ticket + websocket', async () => {
          sockets.push(await connect(await ticketUrl(w.t)));
          return { status: 101 };
        }),
        timed('websocket (headers)', async () => {
          sockets.push(await connect(`${w.t.baseUrl.replace(/^http/, 'ws')}/ws`, w.alice.headers));
          return { status: 101 };
        }),
      ]);
    }
    // A's transfers reach B's subscriber through the outbox, without Redis's announcements.
    const delivered = await onB.next((m) => m.type === 'newTransfer', 5_000);
    expect(delivered.data.to.toLowerCase()).toBe(w.bob.wallet.toLowerCase());

    const ready = await w.t.http('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: 'ok', redis: 'degraded' });
    const during = (await w.t.http('GET', '/metrics')).text;
    expect(metric(during, 'redis_up')).toBe(0);
    expect(metric(during, 'redis_fallbacks_total{use="rate limits"}')).toBeGreaterThan(0);

    const slowest = Math.max(...answers.map((answer) => answer.ms));
    console.log(
      `14.2 during the outage: ${answers.length} calls, statuses ${JSON.stringify([...new Set(answers.map((a) => a.status))])}, slowest ${slowest} ms`,
    );
    expect(answers.filter((answer) => answer.status >= 500)).toEqual([]);
    expect(answers.filter((answer) => answer.status >= 400)).toEqual([]);
    expect(slowest).toBeLessThan(2_500); // before: up to 10 s per call
    for (const socket of sockets) socket.close();

    redis.heal();
    const healed = Date.now();
    let back = -1;
    while (Date.now() - healed < 5_000) {
      const again = await w.t.http('GET', '/readyz');
      if (again.body.checks.redis === 'ok') {
        back = Date.now() - healed;
        break;
      }
      await sleep(50);
    }
    console.log(`14.2 outage ${healed - outageStarted} ms; Redis in use again ${back} ms after its return`);
    expect(back).toBeGreaterThanOrEqual(0);
    expect(back).toBeLessThan(5_000);
    // The shared counters are used again: a login counts in Redis under this deployment's prefix.
    const loginKeys = await direct.keys(`${w.redisPrefix}ratelimit:login:ip:*`);
    if (loginKeys.length > 0) await direct.del(...loginKeys);
    const login = await w.t.http('POST', '/api/v1/auth/login', {
      body: { username: w.alice.username, password: PASSWORD },
    });
    expect(login.status).toBe(200);
    const [counter] = await direct.keys(`${w.redisPrefix}ratelimit:login:ip:*`);
    expect(await direct.get(counter)).toBe('1');
    expect(metric((await w.t.http('GET', '/metrics')).text, 'redis_up')).toBe(1);
    onB.close();
  });

  it('14.2: a Redis that hangs (connections open, no answer) costs a call at most its short timeout: no 5xx, then shared again', async () => {
    const redis = w.redis as NonNullable<FaultWorld['redis']>;
    redis.pause();
    const answers: { status: number; ms: number }[] = [];
    try {
      for (let round = 0; round < 3; round++) {
        const calls = [
          () => w.t.http('GET', '/api/v1/me', { headers: w.bob.headers }),
          () =>
            w.t.http('POST', '/api/v1/transfer', {
              body: { assetId: 'gold', from: w.alice.wallet, to: w.bob.wallet, amount: '1' },
              headers: w.alice.headers,
            }),
          () =>
            w.t.http('POST', '/api/v1/auth/login', {
              body: { username: w.bob.username, password: PASSWORD },
            }),
          async () => {
            (await connect(await ticketUrl(w.t))).close();
            return { status: 101 };
          },
        ];
        answers.push(
          ...(await Promise.all(
            calls.map(async (call) => {
              const started = Date.now();
              const { status } = await call();
              return { status, ms: Date.now() - started };
            }),
          )),
        );
      }
      const ready = await w.t.http('GET', '/readyz');
      expect(ready.body.checks.redis).toBe('degraded');
    } finally {
      redis.heal();
    }
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    console.log(`14.2 Redis hanging: ${answers.length} calls, slowest ${slowest} ms`);
    expect(answers.filter((answer) => answer.status >= 400)).toEqual([]);
    expect(slowest).toBeLessThan(2_500);
    const healed = Date.now();
    while ((await w.t.http('GET', '/readyz')).body.checks.redis !== 'ok') {
      expect(Date.now() - healed).toBeLessThan(5_000);
      await sleep(50);
    }
  });
});

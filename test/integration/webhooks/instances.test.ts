// Webhook delivery across instances on one PostgreSQL database: two instances never deliver an event
// twice, and a sending instance killed mid-delivery (SIGKILL, so nothing is cleaned up) loses
// nothing: another instance delivers once the dead one's lease lapses. The instances are child
// processes (`node src/server.ts`), as an operator runs them: a crash needs a process to kill.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { TEST_SECRET_KEY } from '../../helpers/app.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';
import { type ServiceProcess, startService } from '../../helpers/service.ts';
import { startReceiver, verified } from './receiver.ts';

const METADATA = { image: 'https://cdn.example-game.com/x.png', attributes: [], creator: 'tests' };

describe.runIf(DB_KINDS.includes('postgres'))('webhooks across instances on postgres', () => {
  let database: ScratchDatabase;
  const services: ServiceProcess[] = [];

  function start(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    return startService({
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: database.databaseUrl as string,
      SECRET_KEY: TEST_SECRET_KEY,
      SEED_DEMO: 'never',
      PUBLIC_URL: 'http://127.0.0.1:1',
      PUBLIC_URL_CHANGE: 'allow',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      WEBHOOK_RETRY_BASE_MS: '50',
      ...extra,
    }).then((service) => {
      services.push(service);
      return service;
    });
  }

  async function call(service: ServiceProcess, method: string, path: string, body?: unknown, headers = {}) {
    const response = await fetch(`http://127.0.0.1:${service.port}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  /** A registered user with an API key, and a webhook on its wallet's newNFT events. */
  async function subscriber(service: ServiceProcess, url: string) {
    const username = `hook${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const password = 'correct horse battery staple';
    const user = await call(service, 'POST', '/api/v1/auth/register', { username, password });
    const { access_token: token } = await call(service, 'POST', '/api/v1/auth/login', { username, password });
    const { key } = await call(
      service,
      'POST',
      '/api/v1/api-keys',
      { name: 'k' },
      { authorization: `Bearer ${token}` },
    );
    const headers = { authorization: `Bearer ${token}`, 'x-api-key': key };
    const hook = await call(
      service,
      'POST',
      '/api/v1/webhooks',
      { url, eventTypes: ['newNFT'], filter: { walletId: user.wallets[0] } },
      headers,
    );
    return { headers, hook };
  }

  beforeAll(async () => {
    database = await migratedDatabase('postgres');
  });
  afterAll(async () => {
    for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
    await database?.drop();
  });

  it('two instances deliver every event exactly once between them, in order', async () => {
    const receiver = await startReceiver();
    try {
      const [a, b] = await Promise.all([start(), start()]);
      const { headers, hook } = await subscriber(a, receiver.url);
      const minted: string[] = [];
      for (let i = 0; i < 20; i++) {
        const via = i % 2 === 0 ? a : b;
        minted.push(
          (await call(via, 'POST', '/api/v1/nft/create', { name: `N${i}`, metadata: METADATA }, headers)).id,
        );
      }
      const requests = await receiver.waitFor(20, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(receiver.received).toHaveLength(20);
      expect(new Set(requests.map((request) => request.id)).size).toBe(20);
      expect(requests.map((request) => verified(hook.secret, request).data.id)).toEqual(minted);
      await Promise.all([a.stop(), b.stop()]);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it('a sender killed mid-delivery loses nothing: another instance delivers after its lease lapses', async () => {
    const receiver = await startReceiver();
    try {
      // Instance A (2 s timeout: a 6 s lease) is the only one running when the event commits.
      const a = await start({ WEBHOOK_TIMEOUT_MS: '2000' });
      const { headers, hook } = await subscriber(a, receiver.url);
      receiver.script('hang');
      const nft = await call(a, 'POST', '/api/v1/nft/create', { name: 'Crash', metadata: METADATA }, headers);
      await receiver.waitFor(1, 20_000);
      a.child.kill('SIGKILL');
      const b = await start();
      const requests = await receiver.waitFor(2, 30_000);
      expect(requests[1].id).toBe(requests[0].id);
      expect(verified(hook.secret, requests[1]).data.id).toBe(nft.id);
      // B records the attempt once the receiver's answer is in: the receiver can hear of it first.
      let delivery: Record<string, unknown> = {};
      for (let waited = 0; waited < 10_000 && delivery.status !== 'succeeded'; waited += 100) {
        // No row at all until then: the fast path writes its successes in batches (every 50 ms).
        delivery =
          (await call(b, 'GET', `/api/v1/webhooks/${hook.id}/deliveries`, undefined, headers)).data[0] ?? {};
        if (delivery.status !== 'succeeded') await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, lastStatusCode: 200 });
      await b.stop();
    } finally {
      await receiver.close();
    }
  }, 120_000);
});

// Webhooks (issue 18) against a real HTTP receiver that verifies every request with the
// `standardwebhooks` library: signed delivery in event order, retries after 5xx and timeouts,
// repair (deliveries, redeliver, replay), secret rotation, and SSRF refusals.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { type Receiver, startReceiver, verified } from './receiver.ts';

const METADATA = { image: 'https://cdn.example-game.com/x.png', attributes: [], creator: 'tests' };
const FAST_RETRIES = {
  WEBHOOK_ALLOW_LOOPBACK: 'true',
  WEBHOOK_RETRY_BASE_MS: '40',
  WEBHOOK_TIMEOUT_MS: '400',
  RATE_LIMIT_ACCOUNT_REQUESTS: '1000',
};

describe.each(DB_KINDS)('webhooks on %s', (kind) => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startTestApp(kind, FAST_RETRIES);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A player with a webhook on its own wallet: only its own NFTs reach the receiver. */
  async function subscribed(): Promise<{ user: HttpUser; id: string; secret: string; receiver: Receiver }> {
    const user = await httpUser(t);
    receiver = await startReceiver();
    const created = await t.http('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['newNFT'], filter: { walletId: user.wallet } },
      headers: user.headers,
    });
    expect(created.status, created.text).toBe(201);
    return { user, id: created.body.id, secret: created.body.secret, receiver };
  }

  async function mint(user: HttpUser, name: string): Promise<string> {
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name, metadata: METADATA },
      headers: user.headers,
    });
    expect(nft.status, nft.text).toBe(201);
    return nft.body.id;
  }

  async function deliveries(user: HttpUser, id: string) {
    const page = await t.http('GET', `/api/v1/webhooks/${id}/deliveries?limit=100`, {
      headers: user.headers,
    });
    expect(page.status, page.text).toBe(200);
    return page.body.data as {
      id: string;
      eventId: string;
      status: string;
      attempts: number;
      lastStatusCode: number;
      lastAttemptAt: string;
      deliveredAt: string | null;
    }[];
  }

  it('delivers each matching event once, signed, in event-id order', async () => {
    const { user, id, secret, receiver } = await subscribed();
    const began = Date.now();
    try {
      const nfts: string[] = [];
      for (let i = 0; i < 5; i++) nfts.push(await mint(user, `Blade ${i}`));
      const requests = await receiver.waitFor(5);
      const events = requests.map((request) => verified(secret, request));
      expect(events.map((event) => event.data.id)).toEqual(nfts);
      expect(events.every((event) => event.type === 'newNFT')).toBe(true);
      const ids = events.map((event) => Number(event.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      // A forged or altered message fails verification.
      expect(() =>
        verified(secret, { ...requests[0], body: requests[0].body.replace('Blade', 'Blunt') }),
      ).toThrow();
      expect(() => verified(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, requests[0])).toThrow();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.received).toHaveLength(5);
      const listed = await deliveries(user, id);
      expect(listed.map((delivery) => [delivery.status, delivery.attempts, delivery.lastStatusCode])).toEqual(
        Array(5).fill(['succeeded', 1, 200]),
      );
      // The rows written in a batch (prepared statements, not the ORM) carry the times as the ORM reads them.
      for (const delivery of listed) {
        for (const at of [delivery.lastAttemptAt, delivery.deliveredAt]) {
          expect(Date.parse(String(at))).toBeGreaterThanOrEqual(began - 1000);
          expect(Date.parse(String(at))).toBeLessThanOrEqual(Date.now() + 1000);
        }
      }
      expect(new Set(requests.map((request) => request.id))).toEqual(
        new Set(listed.map((delivery) => delivery.id)),
      );
    } finally {
      await receiver.close();
    }
  });

  it('retries after a 5xx and after a timeout, later events waiting their turn', async () => {
    const { user, id, secret, receiver } = await subscribed();
    try {
      receiver.script(503, 'hang');
      const first = await mint(user, 'Stubborn');
      const second = await mint(user, 'Patient');
      const requests = await receiver.waitFor(4);
      const order = requests.map((request) => verified(secret, request).data.id);
      // The first event three times (503, no answer, 200), then the second: never out of order.
      expect(order).toEqual([first, first, first, second]);
      expect(new Set(requests.slice(0, 3).map((request) => request.id)).size).toBe(1);
      const listed = await deliveries(user, id);
      const firstDelivery = listed.find((delivery) => delivery.id === requests[0].id);
      expect(firstDelivery).toMatchObject({ status: 'succeeded', attempts: 3, lastStatusCode: 200 });
    } finally {
      await receiver.close();
    }
  });

  it('redelivers one delivery and replays after an event id, with the same webhook-id', async () => {
    const { user, id, secret, receiver } = await subscribed();
    try {
      await mint(user, 'One');
      await mint(user, 'Two');
      const [a, b] = await receiver.waitFor(2);
      const redelivered = await t.http('POST', `/api/v1/webhooks/${id}/deliveries/${a.id}/redeliver`, {
        headers: user.headers,
      });
      expect(redelivered.status, redelivered.text).toBe(202);
      const third = (await receiver.waitFor(3))[2];
      expect(third.id).toBe(a.id);
      const firstEventId = verified(secret, a).id;
      const replay = await t.http('POST', `/api/v1/webhooks/${id}/replay?after=${Number(firstEventId) - 1}`, {
        headers: user.headers,
      });
      expect([replay.status, replay.body.redelivering]).toEqual([202, 2]);
      const replayed = (await receiver.waitFor(5)).slice(3);
      expect(replayed.map((request) => request.id)).toEqual([a.id, b.id]);
    } finally {
      await receiver.close();
    }
  });

  it('rotates the secret: two signatures, each verifying with its own secret', async () => {
    const { user, id, secret, receiver } = await subscribed();
    try {
      const rotated = await t.http('POST', `/api/v1/webhooks/${id}/rotate-secret`, { headers: user.headers });
      expect(rotated.status, rotated.text).toBe(200);
      await mint(user, 'Rotated');
      const [request] = await receiver.waitFor(1);
      expect(request.signature.split(' ')).toHaveLength(2);
      expect(verified(rotated.body.secret, request).type).toBe('newNFT');
      expect(verified(secret, request).type).toBe('newNFT');
    } finally {
      await receiver.close();
    }
  });

  it.runIf(kind === 'postgres')(
    'signs an event committed after a rotation’s answer with the new secret, while the dispatcher’s writes wait',
    async () => {
      // The rotation reaches the subscription's stream before its answer. Before, the dispatcher
      // learned of it at its next read of the held subscriptions, which waits behind its writes of
      // delivered events: an event minted right after the answer went out signed with the previous
      // secret alone (seen once in the client's tests). Here those writes are held at the table lock:
      // another subscription's delivered event waits to be written while the first one rotates.
      const { user, id, secret, receiver: first } = await subscribed();
      const other = await subscribed();
      const orm = t.app.database.orm;
      try {
        await mint(user, 'Streaming');
        await first.waitFor(1);
        const released = Promise.withResolvers<void>();
        const locked = Promise.withResolvers<void>();
        const blocker = orm.em.fork().transactional(async (em) => {
          await (em as unknown as EntityManager).execute(
            'lock table webhook_delivery in share row exclusive mode',
          );
          locked.resolve();
          await released.promise;
        });
        try {
          await locked.promise;
          await mint(other.user, 'Waiting to be written');
          await other.receiver.waitFor(1);
          // The dispatcher's write of that delivery is waiting for the table.
          await expect
            .poll(async () => {
              const rows = await (orm.em.fork() as unknown as EntityManager).execute<
                { n: string | number }[]
              >(
                "select count(*) as n from pg_locks where relation = 'webhook_delivery'::regclass and not granted",
              );
              return Number(rows[0].n);
            })
            .toBeGreaterThan(0);
          const rotated = await t.http('POST', `/api/v1/webhooks/${id}/rotate-secret`, {
            headers: user.headers,
          });
          expect(rotated.status, rotated.text).toBe(200);
          const nft = await mint(user, 'Rotated');
          const [, request] = await first.waitFor(2);
          expect(request.signature.split(' ')).toHaveLength(2);
          expect(verified(rotated.body.secret, request).data.id).toBe(nft);
          expect(verified(secret, request).data.id).toBe(nft);
        } finally {
          released.resolve();
          await blocker;
        }
      } finally {
        await first.close();
        await other.receiver.close();
      }
    },
  );

  it('sends nothing while disabled and resumes in order when enabled', async () => {
    const { user, id, receiver } = await subscribed();
    try {
      const disabled = await t.http('POST', `/api/v1/webhooks/${id}/disable`, { headers: user.headers });
      expect(disabled.body).toMatchObject({ enabled: false, status: 'disabled' });
      await mint(user, 'Quiet');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(receiver.received).toHaveLength(0);
      const enabled = await t.http('POST', `/api/v1/webhooks/${id}/enable`, { headers: user.headers });
      expect(enabled.body).toMatchObject({ enabled: true, status: 'active' });
      await receiver.waitFor(1);
      const listed = await t.http('GET', '/api/v1/webhooks', { headers: user.headers });
      expect(listed.body.data.map((hook: { id: string }) => hook.id)).toEqual([id]);
      expect(listed.text).not.toContain('whsec_');
      expect((await t.http('DELETE', `/api/v1/webhooks/${id}`, { headers: user.headers })).status).toBe(204);
      expect((await t.http('GET', `/api/v1/webhooks/${id}`, { headers: user.headers })).status).toBe(404);
    } finally {
      await receiver.close();
    }
  });
});

describe.each(DB_KINDS)('webhook targets (SSRF) on %s', (kind) => {
  let t: TestApp;
  let user: HttpUser;
  let receiver: Receiver;

  beforeAll(async () => {
    // The production default: no loopback, no private networks.
    t = await startTestApp(kind, { WEBHOOK_TIMEOUT_MS: '400', WEBHOOK_RETRY_BASE_MS: '40' });
    user = await httpUser(t);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('refuses plain http, credentials, and private, loopback, link-local and metadata addresses', async () => {
    for (const url of [
      receiver.url,
      'http://hooks.example.com/x',
      'https://user:pw@hooks.example.com/x',
      'https://10.1.2.3/x',
      'https://192.168.0.10/x',
      'https://127.0.0.1/x',
      'https://[::1]/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:127.0.0.1]/x',
      'ftp://hooks.example.com/x',
    ]) {
      const refused = await t.http('POST', '/api/v1/webhooks', { body: { url }, headers: user.headers });
      expect([url, refused.status, refused.body.errors?.[0]?.pointer]).toEqual([url, 400, '/body/url']);
    }
    expect((await t.http('GET', '/api/v1/webhooks', { headers: user.headers })).body.data).toEqual([]);
  });

  it('checks the address a name resolves to at delivery time, and never connects to a refused one', async () => {
    // A public-looking name that resolves to loopback (as a rebinding DNS answer would).
    const port = new URL(receiver.url).port;
    const created = await t.http('POST', '/api/v1/webhooks', {
      body: {
        url: `https://localhost:${port}/hooks`,
        eventTypes: ['newNFT'],
        filter: { walletId: user.wallet },
      },
      headers: user.headers,
    });
    expect(created.status, created.text).toBe(201);
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Bait', metadata: METADATA },
      headers: user.headers,
    });
    expect(nft.status).toBe(201);
    let failed: { lastError: string; attempts: number } | undefined;
    for (let i = 0; i < 100 && !failed; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const page = await t.http('GET', `/api/v1/webhooks/${created.body.id}/deliveries`, {
        headers: user.headers,
      });
      failed = page.body.data.find((delivery: { attempts: number }) => delivery.attempts > 0);
    }
    expect(failed?.lastError).toMatch(/refused address/);
    expect(receiver.received).toEqual([]);
  });
});

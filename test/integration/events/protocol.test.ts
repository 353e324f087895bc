// The WebSocket protocol's edges: bad frames, limits, handshake refusals, tickets, credentials that
// stop holding, heartbeats and graceful shutdown. Each answer is the one the AsyncAPI contract
// documents (the test client validates every server message against it).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import type { HttpUser } from '../../helpers/ledger-fixtures.ts';
import { httpUser } from '../../helpers/ledger-fixtures.ts';
import { connect, type TestSocket } from '../../helpers/ws.ts';
import {
  createWorld,
  isEvent,
  ok,
  openSocket,
  postPrice,
  STRANGER,
  sleep,
  subscribe,
  TEST_ENV,
  type World,
  wsUrl,
} from './world.ts';

const HEARTBEAT_MS = 400;
const BAD_CHECKSUM = STRANGER.replace('0xdb', '0xDb');

/** The status of a refused handshake. */
async function refusal(url: string, headers: Record<string, string> = {}): Promise<number> {
  const socket = await connect(url, headers).catch((error: { status?: number }) => error);
  if (!('status' in socket)) throw new Error('the handshake was accepted');
  return socket.status as number;
}

async function apiKeyId(t: TestApp, user: HttpUser): Promise<string> {
  const bearer = { authorization: user.headers.authorization };
  const keys = await ok(t.http('GET', '/api/v1/api-keys', { headers: bearer }), 200);
  return keys.data[0].id;
}

describe('WebSocket protocol', () => {
  let t: TestApp;
  let w: World;

  beforeAll(async () => {
    t = await startTestApp('sqlite', {
      ...TEST_ENV,
      WS_HEARTBEAT_MS: String(HEARTBEAT_MS),
      WS_MAX_SUBSCRIPTIONS: '3',
      WS_MAX_CONNECTIONS_PER_KEY: '3',
      WS_MAX_CONNECTIONS_PER_USER: '4',
      CORS_ORIGINS: 'https://game.example.com',
    });
    w = await createWorld(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers every bad frame on /ws with its documented error and keeps the connection', async () => {
    const socket = await openSocket(t, await httpUser(t));
    const cases: [unknown, string, string | null][] = [
      ['not json', 'invalid_message', null],
      ['[1, 2]', 'invalid_message', null],
      [{ requestId: 'r0' }, 'invalid_message', 'r0'],
      [{ type: 7, requestId: 'r1' }, 'invalid_message', 'r1'],
      [{ type: 'subscribe_all', requestId: 'r2' }, 'unknown_type', 'r2'],
      [{ type: 'subscribe', requestId: 'r3', events: ['newSword'] }, 'invalid_filter', 'r3'],
      [{ type: 'subscribe', requestId: 'r4', events: [] }, 'invalid_filter', 'r4'],
      [{ type: 'subscribe', requestId: 'r5', walletId: BAD_CHECKSUM }, 'invalid_filter', 'r5'],
      [{ type: 'subscribe', requestId: 'r6', walletId: '0x123' }, 'invalid_filter', 'r6'],
      [{ type: 'subscribe', requestId: 'r7', lastEventId: 'abc' }, 'invalid_filter', 'r7'],
      [{ type: 'subscribe', requestId: 'r8', assetId: 'Not An Id!' }, 'invalid_filter', 'r8'],
      [{ type: 'subscribe', requestId: 'r9', colour: 'red' }, 'invalid_message', 'r9'],
      [{ type: 'unsubscribe', requestId: 'r10' }, 'invalid_message', 'r10'],
      [{ type: 'unsubscribe', requestId: 'r11', subscriptionId: 'nope' }, 'invalid_message', 'r11'],
      [
        { type: 'unsubscribe', requestId: 'r12', subscriptionId: 'sub_000000000000' },
        'unknown_subscription',
        'r12',
      ],
      // A requestId the contract does not allow is not echoed.
      [{ type: 'ping', requestId: 'x'.repeat(65) }, 'invalid_message', null],
      [{ type: 'ping', requestId: '' }, 'invalid_message', null],
    ];
    for (const [frame, code, requestId] of cases) {
      socket.send(frame);
      const answer = await socket.next();
      expect(answer, JSON.stringify(frame)).toMatchObject({ type: 'error', code, requestId });
      expect(answer.message.length).toBeGreaterThan(0);
    }
    socket.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(await socket.next()).toMatchObject({ type: 'error', code: 'invalid_message', requestId: null });
    socket.send({ type: 'ping', requestId: 'still-here' });
    expect(await socket.next()).toMatchObject({ type: 'pong', requestId: 'still-here' });
    socket.close();
  });

  it('answers bad frames on /assets/subscribe, which takes only subscribe and ping', async () => {
    const user = await httpUser(t);
    const socket = await openSocket(t, user, '/assets/subscribe');
    const cases: [unknown, string][] = [
      [{ type: 'unsubscribe', subscriptionId: 'sub_000000000000' }, 'unknown_type'],
      [{ type: 'subscribe', walletId: user.wallet, assetId: 'gold', events: ['newNFT'] }, 'invalid_message'],
      [
        { type: 'subscribe', walletId: user.wallet, assetId: 'gold', collection: 'dawn-quest' },
        'invalid_message',
      ],
      [{ type: 'subscribe', walletId: user.wallet }, 'invalid_filter'],
      [{ type: 'subscribe', assetId: 'gold' }, 'invalid_filter'],
      [{ type: 'subscribe', walletId: BAD_CHECKSUM, assetId: 'gold' }, 'invalid_filter'],
    ];
    for (const [frame, code] of cases) {
      socket.send(frame);
      expect(await socket.next(), JSON.stringify(frame)).toMatchObject({ type: 'error', code });
    }
    socket.send({ type: 'ping' });
    expect(await socket.next()).toMatchObject({ type: 'pong', requestId: null });
    socket.close();
  });

  it('limits subscriptions per connection, also when subscribes arrive together', async () => {
    const socket = await openSocket(t, await httpUser(t));
    // With lastEventId, each subscribe waits on the database before it is counted.
    for (let i = 1; i <= 4; i++) socket.send({ type: 'subscribe', requestId: `s${i}`, lastEventId: '0' });
    const answers = await Promise.all([1, 2, 3, 4].map((i) => socket.next((m) => m.requestId === `s${i}`)));
    expect(answers.map((m) => m.type)).toEqual(['subscribed', 'subscribed', 'subscribed', 'error']);
    expect(answers[3].code).toBe('too_many_subscriptions');
    socket.send({ type: 'unsubscribe', requestId: 'u', subscriptionId: answers[0].subscriptionId });
    expect(await socket.next((m) => m.requestId === 'u')).toMatchObject({ type: 'unsubscribed' });
    await subscribe(socket, { events: ['priceUpdate'] });
    socket.close();
  });

  it('closes with 1009 after message_too_large for a frame over 16 KiB', async () => {
    const socket = await openSocket(t, await httpUser(t));
    socket.send({ type: 'ping', requestId: 'big', pad: 'x'.repeat(17 * 1024) });
    expect(await socket.next()).toMatchObject({ type: 'error', code: 'message_too_large', requestId: null });
    expect((await socket.closed).code).toBe(1009);
    const huge = await openSocket(t, await httpUser(t));
    huge.send('x'.repeat(100 * 1024));
    expect((await huge.closed).code).toBe(1009);
  });

  it('answers rate_limited past the message rate, and closes with 1008 a client that keeps flooding', async () => {
    const socket = await openSocket(t, await httpUser(t));
    for (let i = 0; i < 30; i++) socket.send({ type: 'ping', requestId: `p${i}` });
    await sleep(300);
    const limited = socket.messages.filter((m) => m.type === 'error' && m.code === 'rate_limited');
    const pongs = socket.messages.filter((m) => m.type === 'pong');
    expect(limited.length).toBeGreaterThanOrEqual(5);
    expect(pongs.length + limited.length).toBe(30);
    await sleep(1000);
    socket.send({ type: 'ping', requestId: 'calm' });
    expect(await socket.next((m) => m.requestId === 'calm')).toMatchObject({ type: 'pong' });
    for (let i = 0; i < 100; i++) socket.send({ type: 'ping' });
    expect((await socket.closed).code).toBe(1008);
  });

  it('refuses handshakes without valid credentials (401), on unknown channels (404) and past the per-key limit (429)', async () => {
    const [alice, bob] = await Promise.all([httpUser(t), httpUser(t)]);
    const url = wsUrl(t);
    expect(await refusal(url)).toBe(401);
    expect(await refusal(url, { authorization: alice.headers.authorization })).toBe(401);
    expect(await refusal(url, { 'x-api-key': alice.headers['x-api-key'] })).toBe(401);
    expect(await refusal(url, { ...alice.headers, authorization: 'Bearer not-a-token' })).toBe(401);
    expect(await refusal(url, { ...alice.headers, 'x-api-key': `gak_${'A'.repeat(43)}` })).toBe(401);
    expect(await refusal(url, { ...alice.headers, 'x-api-key': bob.headers['x-api-key'] })).toBe(401);
    expect(await refusal(wsUrl(t, '/nope'), alice.headers)).toBe(404);

    const open = await Promise.all([1, 2, 3].map(() => openSocket(t, alice)));
    expect(await refusal(url, alice.headers)).toBe(429);
    expect(await refusal(wsUrl(t, '/assets/subscribe'), alice.headers)).toBe(429);
    const other = await openSocket(t, bob); // the limit is per key
    open[0].close();
    await open[0].closed;
    const again = await openSocket(t, alice);
    for (const socket of [...open.slice(1), other, again]) socket.close();
  });

  it('13.5: caps connections per user over all its API keys (429), as the per-key cap does', async () => {
    const alice = await httpUser(t);
    const bearer = { authorization: alice.headers.authorization };
    const second = await ok(
      t.http('POST', '/api/v1/api-keys', { headers: bearer, body: { name: 'second key' } }),
    );
    const withSecond = { ...bearer, 'x-api-key': second.key };
    const url = wsUrl(t);
    const first = await Promise.all([1, 2, 3].map(() => openSocket(t, alice)));
    const other = await connect(url, withSecond); // 4 for alice: her cap
    const refused = await connect(url, withSecond).catch((error) => error);
    expect(refused.status).toBe(429);
    const third = await ok(
      t.http('POST', '/api/v1/api-keys', { headers: bearer, body: { name: 'third key' } }),
    );
    expect(await refusal(url, { ...bearer, 'x-api-key': third.key })).toBe(429);
    // A closed connection, on any key, makes room for one on any other.
    first[0].close();
    await first[0].closed;
    const again = await connect(url, { ...bearer, 'x-api-key': third.key });
    expect(await refusal(url, withSecond)).toBe(429);
    for (const socket of [...first.slice(1), other, again]) socket.close();
  });

  it('13.13: refuses with 403 a browser upgrade from an origin not allowed, before using its ticket', async () => {
    const user = await httpUser(t);
    const { ticket } = await ok(
      t.http('POST', '/api/v1/events/ws-ticket', { headers: user.headers, body: {} }),
    );
    const url = `${wsUrl(t)}?ticket=${ticket}`;
    for (const origin of [
      'https://evil.example',
      'null',
      'https://game.example.com.evil.example',
      'http://game.example.com',
    ]) {
      const refused = await new Promise<{ status: number; body: string; type: string }>((resolve, reject) => {
        const ws = new WebSocket(url, { origin });
        ws.once('open', () => reject(new Error(`the upgrade from ${origin} was accepted`)));
        ws.once('unexpected-response', (_request, response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => {
            body += chunk;
          });
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              body,
              type: String(response.headers['content-type']),
            }),
          );
        });
        ws.once('error', () => {});
      });
      expect(refused.status, origin).toBe(403);
      expect(refused.type).toBe('application/problem+json');
      expect(JSON.parse(refused.body)).toMatchObject({ status: 403, type: '/problems/origin-not-allowed' });
    }
    // The ticket was not used up; the service's own origin and the CORS origins are allowed.
    const fromSelf = new WebSocket(url, { origin: t.baseUrl });
    await new Promise((resolve, reject) => {
      fromSelf.once('open', resolve);
      fromSelf.once('error', reject);
    });
    fromSelf.close();
    const allowed = new WebSocket(wsUrl(t), { origin: 'https://game.example.com', headers: user.headers });
    await new Promise((resolve, reject) => {
      allowed.once('open', resolve);
      allowed.once('error', reject);
    });
    allowed.close();
    // Clients that are not browsers send no Origin and are not affected (every other test).
  });

  it('lets a browser in with a single-use ticket', async () => {
    const user = await httpUser(t);
    const issue = () => ok(t.http('POST', '/api/v1/events/ws-ticket', { headers: user.headers, body: {} }));
    const first = await issue();
    expect(first.url).toBe(`${wsUrl(t)}?ticket=${first.ticket}`);
    const socket = await connect(first.url);
    await subscribe(socket, { events: ['priceUpdate'], assetId: 'gold' });
    const price = await postPrice(w, 'gold');
    expect((await socket.next(isEvent)).data).toEqual(price);
    expect(await refusal(first.url)).toBe(401);
    expect(await refusal(`${wsUrl(t)}?ticket=${'A'.repeat(43)}`)).toBe(401);
    const second = await issue();
    const assets = await connect(`${wsUrl(t, '/assets/subscribe')}?ticket=${second.ticket}`);
    assets.send({ type: 'subscribe', walletId: user.wallet, assetId: 'gold' });
    expect(await assets.next()).toMatchObject({ type: 'subscribed' });
    socket.close();
    assets.close();
  });

  it('closes with 4001 at the next heartbeat when the API key is revoked or the token expires', async () => {
    const [user, bystander] = await Promise.all([httpUser(t), httpUser(t)]);
    const viaHeaders = await openSocket(t, user);
    const ticket = await ok(t.http('POST', '/api/v1/events/ws-ticket', { headers: user.headers, body: {} }));
    const viaTicket = await connect(ticket.url);
    const unused = await ok(t.http('POST', '/api/v1/events/ws-ticket', { headers: user.headers, body: {} }));
    const unaffected = await openSocket(t, bystander);
    const keyId = await apiKeyId(t, user);
    await ok(
      t.http('DELETE', `/api/v1/api-keys/${keyId}`, {
        headers: { authorization: user.headers.authorization },
      }),
      204,
    );
    expect((await viaHeaders.closed).code).toBe(4001);
    expect((await viaTicket.closed).code).toBe(4001);
    expect(await refusal(unused.url)).toBe(401); // a ticket outlives no revocation
    await sleep(3 * HEARTBEAT_MS);
    expect(unaffected.ws.readyState).toBe(WebSocket.OPEN);
    unaffected.close();

    // Token lifetimes are at least 60 s; a ticket for credentials about to expire shows the same path.
    const { ticket: expiring } = await t.app.events.tickets.issue({
      userId: bystander.userId,
      role: 'player',
      scopes: new Set(['assets:read']),
      clientId: 'test',
      tokenId: 'expiring',
      // At least 1 s ahead (floor + 1 could be a millisecond away, and the handshake itself would be
      // refused as expired), then expiring while the socket is open.
      expiresAt: Math.floor(Date.now() / 1000) + 2,
      apiKeyId: await apiKeyId(t, bystander),
      account: bystander.userId,
    });
    const expires = await connect(`${wsUrl(t)}?ticket=${expiring}`);
    const closed = await expires.closed;
    expect(closed.code).toBe(4001);
    expect(closed.reason).toMatch(/expired/);
  });

  it('drops a peer that stops answering pings, and keeps one that answers', async () => {
    const user = await httpUser(t);
    const healthy = await openSocket(t, user);
    const silent = new WebSocket(wsUrl(t), { headers: user.headers, autoPong: false });
    const closed = new Promise<number>((resolve) => silent.on('close', (code) => resolve(code)));
    const started = Date.now();
    expect(await closed).toBe(1006); // terminated, no close frame
    expect(Date.now() - started).toBeLessThan(10 * HEARTBEAT_MS);
    expect(healthy.ws.readyState).toBe(WebSocket.OPEN);
    healthy.send({ type: 'ping', requestId: 'alive' });
    expect(await healthy.next((m) => m.requestId === 'alive')).toMatchObject({ type: 'pong' });
    healthy.close();
  });

  it('14.3: ends only the subscription, with a retryable unavailable error, when its replay fails half-way', async () => {
    const user = await httpUser(t);
    const socket = await openSocket(t, user);
    const live = await subscribe(socket, { assetId: 'gold' });
    const store = t.app.events.store;
    const original = store.after;
    store.after = async () => {
      throw new Error('injected replay failure');
    };
    try {
      socket.send({ type: 'subscribe', requestId: 'resume', lastEventId: '1' });
      const subscribed = await socket.next((m) => m.requestId === 'resume');
      expect(subscribed.type).toBe('subscribed');
      const failure = await socket.next((m) => m.type === 'error');
      expect(failure).toMatchObject({
        code: 'unavailable',
        requestId: 'resume',
        subscriptionId: subscribed.subscriptionId,
      });
      expect(failure.retryAfterMs).toBeGreaterThan(0);
    } finally {
      store.after = original;
    }
    // The connection and its other subscription carry on; the ended one gets nothing more.
    const price = await postPrice(w, 'gold');
    const event = await socket.next(isEvent);
    expect(event.data).toEqual(price);
    expect(event.subscriptionIds).toEqual([live.subscriptionId]);
    socket.send({ type: 'subscribe', requestId: 'again', lastEventId: '1' });
    expect((await socket.next((m) => m.requestId === 'again')).type).toBe('subscribed');
    expect((await socket.next((m) => m.type === 'replayed')).count).toBeGreaterThan(0);
    socket.close();
  });

  // Last: drains the instance.
  it('closes every connection with 1001 on graceful shutdown', async () => {
    const sockets: TestSocket[] = await Promise.all([
      openSocket(t, await httpUser(t)),
      openSocket(t, await httpUser(t), '/assets/subscribe'),
    ]);
    t.app.drain();
    for (const socket of sockets) expect((await socket.closed).code).toBe(1001);
    // Clients that reconnect meanwhile are sent elsewhere.
    expect(await refusal(wsUrl(t), (await httpUser(t)).headers)).toBe(503);
  });
});

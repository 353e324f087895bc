// Issue 30.6: service accounts multiplied every per-user limit (a player may own several, and each
// had a whole user's request rate, WebSocket connections and webhooks). A service account's use
// counts against its owner's limits. Through the real HTTP API and WebSocket gateway, every response
// checked against the contract, on SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { connect } from '../helpers/ws.ts';
import {
  bearer,
  credentials,
  newSession,
  type Session,
  serviceAccountCredentials,
} from '../integration/auth/auth-helpers.ts';

const USER_REQUESTS = 30;

/** The HTTP status of a refused handshake (throws if the handshake is accepted). */
async function refusal(url: string, headers: Record<string, string>): Promise<number> {
  const socket = await connect(url, headers).catch((error: { status?: number }) => error);
  if (!('status' in socket)) throw new Error('the handshake was accepted');
  return socket.status as number;
}

describe.each(DB_KINDS)('service accounts and their owner’s limits on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, {
      LOGIN_RATE_LIMIT_REQUESTS: '1000',
      RATE_LIMIT_REQUESTS: '1000',
      RATE_LIMIT_USER_REQUESTS: String(USER_REQUESTS),
      RATE_LIMIT_ACCOUNT_REQUESTS: '1000',
      WS_MAX_CONNECTIONS_PER_USER: '1',
      MAX_WEBHOOKS_PER_USER: '1',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A player service account of `owner`, with a client credentials token and its own API key. */
  async function serviceAccount(owner: Session) {
    const created = await t.http('POST', '/api/v1/service-accounts', {
      body: { name: 'Bot', role: 'player' },
      headers: bearer(owner.accessToken),
    });
    expect(created.status, created.text).toBe(201);
    return { id: created.body.id as string, headers: await serviceAccountCredentials(t, created.body) };
  }

  it("30.6: a service account's requests count against its owner's rate; its own accounts add none", async () => {
    const owner = await newSession(t);
    const bots = [await serviceAccount(owner), await serviceAccount(owner)];
    const me = (headers: Record<string, string>) => t.http('GET', '/api/v1/me', { headers });
    const statuses: number[] = [];
    for (let i = 0; i < USER_REQUESTS; i++) statuses.push((await me(bots[i % 2].headers)).status);
    // The owner's budget was also spent on its session and the accounts' creation: it runs out
    // before the bots' 30 requests (two bots each with their own budget would all pass).
    expect(statuses).toContain(429);
    const refused = await me(credentials(owner.accessToken, owner.apiKey));
    expect([refused.status, refused.body.type]).toEqual([429, '/problems/rate-limited']);
    expect(refused.headers.get('ratelimit')).toMatch(/"user";r=0;t=\d+$/);
  });

  it("30.6: a service account's WebSocket connections count against its owner's cap", async () => {
    const owner = await newSession(t);
    const bot = await serviceAccount(owner);
    const url = `${t.baseUrl.replace('http', 'ws')}/ws`;
    const socket = await connect(url, credentials(owner.accessToken, owner.apiKey));
    try {
      expect(await refusal(url, bot.headers)).toBe(429);
    } finally {
      socket.close();
    }
  });

  it("30.6: a service account's webhooks count against its owner's quota", async () => {
    const owner = await newSession(t);
    const bot = await serviceAccount(owner);
    const body = { url: 'http://127.0.0.1:9/hook', eventTypes: ['newNFT'] };
    const first = await t.http('POST', '/api/v1/webhooks', {
      body,
      headers: credentials(owner.accessToken, owner.apiKey),
    });
    expect(first.status, first.text).toBe(201);
    const second = await t.http('POST', '/api/v1/webhooks', { body, headers: bot.headers });
    expect([second.status, second.body.type]).toEqual([409, '/problems/quota-exceeded']);
  });
});

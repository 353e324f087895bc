// Issue 13.5: limits per key did not limit a user. A user's keys share one rate, account management
// (API keys, applications) is rate limited per user, and a user holds a bounded number of keys and
// applications, also under concurrent creation. Through the real HTTP API, every response checked
// against the contract, on SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { bearer, createApiKey, credentials, newSession } from '../integration/auth/auth-helpers.ts';

const REDIRECT_URI = 'https://game.example.com/cb';

describe.each(DB_KINDS)('per-user limits on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, {
      LOGIN_RATE_LIMIT_REQUESTS: '1000',
      RATE_LIMIT_REQUESTS: '5',
      RATE_LIMIT_USER_REQUESTS: '8',
      RATE_LIMIT_ACCOUNT_REQUESTS: '20',
      MAX_API_KEYS_PER_USER: '4',
      MAX_APPLICATIONS_PER_USER: '2',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("13.5: a second API key does not raise a user's rate: the user's budget runs out across keys", async () => {
    const session = await newSession(t);
    const second = await createApiKey(t, session.accessToken, 'second');
    const me = (key: string) =>
      t.http('GET', '/api/v1/me', { headers: credentials(session.accessToken, key) });
    for (let i = 0; i < 5; i++) expect((await me(session.apiKey)).status).toBe(200);
    expect((await me(session.apiKey)).status).toBe(429); // the first key's own limit
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await me(second.key));
    const statuses = answers.map((answer) => answer.status);
    // The user's 8: two key creations, five reads with the first key (its sixth was stopped by the
    // key's own limit before the user's count), one with the second key.
    expect(statuses).toEqual([200, 429, 429, 429, 429]);
    const limited = answers[1];
    expect(limited.body.type).toBe('/problems/rate-limited');
    expect(limited.headers.get('ratelimit')).toMatch(/"user";r=0;t=\d+$/);
    expect(limited.headers.get('ratelimit-policy')).toBe('"default";q=5;w=60, "user";q=8;w=60');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('13.5: account management (API keys, applications) is rate limited per user, with RateLimit headers', async () => {
    const session = await newSession(t); // its key creation counted once
    const statuses: number[] = [];
    let last: { status: number; headers: Headers; body: { type?: string } } | undefined;
    for (let i = 0; i < 8; i++) {
      const path = i % 2 === 0 ? '/api/v1/api-keys' : '/api/v1/applications';
      last = await t.http('GET', path, { headers: bearer(session.accessToken) });
      statuses.push(last.status);
      if (last.status === 200)
        expect(last.headers.get('ratelimit')).toMatch(/^"user";r=\d+;t=\d+, "account";r=\d+;t=\d+$/);
    }
    // 1 + 7 requests fit the user's 8; the 9th is refused by the user's budget.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 429]);
    expect(last?.body.type).toBe('/problems/rate-limited');
  });

  it('13.5: a user holds at most MAX_API_KEYS_PER_USER active keys; a revoked one frees its place', async () => {
    const session = await newSession(t); // key 1
    const headers = bearer(session.accessToken);
    const created = [];
    for (let i = 0; i < 3; i++) {
      const key = await t.http('POST', '/api/v1/api-keys', { body: { name: `k${i}` }, headers });
      expect(key.status).toBe(201);
      created.push(key.body.id as string);
    }
    const over = await t.http('POST', '/api/v1/api-keys', { body: { name: 'one too many' }, headers });
    expect([over.status, over.body.type]).toEqual([409, '/problems/quota-exceeded']);
    expect((await t.http('DELETE', `/api/v1/api-keys/${created[0]}`, { headers })).status).toBe(204);
    expect(
      (await t.http('POST', '/api/v1/api-keys', { body: { name: 'replacement' }, headers })).status,
    ).toBe(201);
  });

  it('13.5: concurrent key creations never overshoot the cap', async () => {
    const session = await newSession(t); // key 1 of 4
    const headers = bearer(session.accessToken);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        t.http('POST', '/api/v1/api-keys', { body: { name: `race ${i}` }, headers }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(3);
    const listed = await t.http('GET', '/api/v1/api-keys', { headers });
    expect(listed.body.data.filter((k: { revokedAt: string | null }) => k.revokedAt === null)).toHaveLength(
      4,
    );
  });

  it('13.5: a user holds at most MAX_APPLICATIONS_PER_USER applications', async () => {
    const session = await newSession(t);
    const headers = bearer(session.accessToken);
    const create = (name: string) =>
      t.http('POST', '/api/v1/applications', { body: { name, redirectUris: [REDIRECT_URI] }, headers });
    expect((await create('One')).status).toBe(201);
    const second = await create('Two');
    expect(second.status).toBe(201);
    const over = await create('Three');
    expect([over.status, over.body.type]).toEqual([409, '/problems/quota-exceeded']);
    expect((await t.http('DELETE', `/api/v1/applications/${second.body.clientId}`, { headers })).status).toBe(
      204,
    );
    expect((await create('Three')).status).toBe(201);
  });
});

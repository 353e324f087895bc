// Issue 30.12, the smaller findings on limits: `private_key_jwt` assertions valid for years were
// accepted; a capped service account's `/me` showed its stored role; batches cost one rate unit
// whatever their size. Through the real HTTP API, every response checked against the contract, on
// SQLite and PostgreSQL.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { type HttpUser, httpUser } from '../helpers/ledger-fixtures.ts';
import { bearer, login, newSession, serviceAccountCredentials } from '../integration/auth/auth-helpers.ts';

const KEY_REQUESTS = 20;
const ADDRESS = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359';

describe.each(DB_KINDS)('smaller limits (30.12) on %s', (kind) => {
  let t: TestApp;
  let admin: HttpUser;
  beforeAll(async () => {
    t = await startTestApp(kind, {
      LOGIN_RATE_LIMIT_REQUESTS: '1000',
      RATE_LIMIT_REQUESTS: String(KEY_REQUESTS),
      RATE_LIMIT_ACCOUNT_REQUESTS: '1000',
    });
    admin = await httpUser(t, 'admin');
  });
  afterAll(async () => {
    await t?.close();
  });

  async function setRole(userId: string, role: string) {
    const changed = await t.http('PUT', `/api/v1/users/${userId}/role`, {
      body: { role },
      headers: admin.headers,
    });
    expect(changed.status, changed.text).toBe(200);
  }

  it('30.12: a private_key_jwt assertion valid for 10 years is refused; a short one is accepted', async () => {
    const owner = await newSession(t);
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const created = await t.http('POST', '/api/v1/service-accounts', {
      body: {
        name: 'Signed bot',
        role: 'player',
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwks: { keys: [{ ...(await exportJWK(publicKey)), alg: 'EdDSA', kid: 'k1' }] },
      },
      headers: bearer(owner.accessToken),
    });
    expect(created.status, created.text).toBe(201);
    const clientId = created.body.id as string;
    const token = async (lifetimeSeconds: number) => {
      const now = Math.floor(Date.now() / 1000);
      const assertion = await new SignJWT({ jti: randomUUID() })
        .setProtectedHeader({ alg: 'EdDSA', kid: 'k1' })
        .setIssuer(clientId)
        .setSubject(clientId)
        .setAudience(`${t.baseUrl}/token`)
        .setIssuedAt(now)
        .setExpirationTime(now + lifetimeSeconds)
        .sign(privateKey);
      return t.http('POST', '/token', {
        form: {
          grant_type: 'client_credentials',
          scope: 'assets:read',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: assertion,
        },
      });
    };
    const decade = await token(10 * 365 * 86_400);
    expect([decade.status, decade.body.error]).toEqual([401, 'invalid_client']);
    const hour = await token(3600);
    expect([hour.status, hour.body.error]).toEqual([401, 'invalid_client']);
    const minute = await token(60);
    expect(minute.status, minute.text).toBe(200);
  });

  it("30.12: a capped service account's /me shows the role it acts with, not its stored one", async () => {
    const owner = await newSession(t);
    await setRole(owner.userId, 'oracle');
    const ownerToken = (await login(t, owner.username)).access_token;
    const created = await t.http('POST', '/api/v1/service-accounts', {
      body: { name: 'Feed', role: 'oracle' },
      headers: bearer(ownerToken),
    });
    expect(created.status, created.text).toBe(201);
    const headers = await serviceAccountCredentials(t, created.body);
    const me = () => t.http('GET', '/api/v1/me', { headers });
    expect((await me()).body.role).toBe('oracle');
    await setRole(owner.userId, 'player');
    const capped = await me();
    expect([capped.status, capped.body.role]).toEqual([200, 'player']);
  });

  it('30.12: a transfer batch and a mint batch cost one rate unit per leg or item', async () => {
    const player = await httpUser(t); // one request of its key's budget used
    const leg = { assetId: 'gold', from: player.wallet, to: ADDRESS, amount: '1' };
    const transfers = (count: number) =>
      t.http('POST', '/api/v1/transfer/batch', {
        body: { legs: Array.from({ length: count }, () => leg) },
        headers: player.headers,
      });
    // 1 + 10 units fit the key's 20; 10 more do not.
    expect((await transfers(10)).status).not.toBe(429);
    const refused = await transfers(10);
    expect([refused.status, refused.body.type]).toEqual([429, '/problems/rate-limited']);

    const studio = await httpUser(t, 'studio');
    const item = { to: ADDRESS, currency: 'gold', amount: '1' };
    const minted = await t.http('POST', '/api/v1/collections/no-such-collection/mint/batch', {
      body: { items: Array.from({ length: 25 }, () => item) },
      headers: studio.headers,
    });
    expect([minted.status, minted.body.type]).toEqual([429, '/problems/rate-limited']);
  });
});

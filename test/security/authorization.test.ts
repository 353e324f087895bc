// OWASP API1 (object level), API3 (object property level) and API5 (function level) authorization,
// through the real HTTP API with real tokens and keys (every response checked against the contract).
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { type HttpUser, httpUser } from '../helpers/ledger-fixtures.ts';
import { authorizeInBrowser, Browser, bearer, login, register } from '../integration/auth/auth-helpers.ts';

const METADATA = { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' };
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

describe.each(DB_KINDS)('authorization on %s', (kind) => {
  let t: TestApp;
  let alice: HttpUser;
  let bob: HttpUser;
  let aliceNft: string;

  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000' });
    const studio = await httpUser(t, 'studio');
    alice = await httpUser(t);
    bob = await httpUser(t);
    const collection = await t.http('POST', '/api/v1/collections', {
      body: { id: 'dawn-quest', name: 'Dawn Quest' },
      headers: studio.headers,
    });
    expect(collection.status).toBe(201);
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Sword of Dawn', metadata: METADATA },
      headers: alice.headers,
    });
    expect(nft.status).toBe(201);
    aliceNft = nft.body.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('object level (API1)', () => {
    it("never shows or touches another user's applications and API keys: 404 as if they did not exist", async () => {
      const app = await t.http('POST', '/api/v1/applications', {
        body: { name: 'Alice app', redirectUris: [REDIRECT_URI] },
        headers: alice.headers,
      });
      expect(app.status).toBe(201);
      const aliceKeys = await t.http('GET', '/api/v1/api-keys', { headers: alice.headers });
      const aliceKeyId = aliceKeys.body.data[0].id as string;

      const bobKeys = await t.http('GET', '/api/v1/api-keys', { headers: bob.headers });
      expect(bobKeys.body.data.map((k: { id: string }) => k.id)).not.toContain(aliceKeyId);
      const bobApps = await t.http('GET', '/api/v1/applications', { headers: bob.headers });
      expect(bobApps.body.data.map((a: { clientId: string }) => a.clientId)).not.toContain(app.body.clientId);

      const revoke = await t.http('DELETE', `/api/v1/api-keys/${aliceKeyId}`, { headers: bob.headers });
      expect(revoke.status).toBe(404);
      const remove = await t.http('DELETE', `/api/v1/applications/${app.body.clientId}`, {
        headers: bob.headers,
      });
      expect(remove.status).toBe(404);
      // Alice's key and application are untouched.
      expect((await t.http('GET', '/api/v1/me', { headers: alice.headers })).status).toBe(200);
      const stillThere = await t.http('GET', '/api/v1/applications', { headers: alice.headers });
      expect(stillThere.body.data.map((a: { clientId: string }) => a.clientId)).toContain(app.body.clientId);
    });

    it("refuses to move assets out of another user's wallet (403) and leaves them where they are", async () => {
      const steal = await t.http('POST', '/api/v1/transfer', {
        body: { assetId: aliceNft, from: alice.wallet, to: bob.wallet, amount: '1' },
        headers: { ...bob.headers, 'idempotency-key': 'steal-1' },
      });
      expect([steal.status, steal.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
      // Naming one's own wallet as the source does not help either.
      const fromOwn = await t.http('POST', '/api/v1/transfer', {
        body: { assetId: aliceNft, from: bob.wallet, to: alice.wallet, amount: '1' },
        headers: { ...bob.headers, 'idempotency-key': 'steal-2' },
      });
      expect([fromOwn.status, fromOwn.body.type]).toEqual([409, '/problems/insufficient-balance']);
      const asset = await t.http('GET', `/assets/${aliceNft}`, { headers: bob.headers });
      expect(asset.body.owner).toBe(alice.wallet);
      const transfers = await t.http('GET', `/api/v1/transfers?assetId=${aliceNft}`, {
        headers: bob.headers,
      });
      // No transfer: its history is its mint alone (issue 37), to alice.
      expect(
        transfers.body.data.map((entry: { from: string; to: string }) => [entry.from, entry.to]),
      ).toEqual([['0x0000000000000000000000000000000000000000', alice.wallet]]);
    });

    it("refuses to mint into another user's wallet (403)", async () => {
      const response = await t.http('POST', '/api/v1/nft/create', {
        body: { name: 'Gift', metadata: METADATA, collection: 'dawn-quest', to: alice.wallet },
        headers: bob.headers,
      });
      expect([response.status, response.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    });
  });

  describe('object property level (API3): mass assignment is a 400 and changes nothing', () => {
    it('refuses a role, an id or a wallet in registration', async () => {
      for (const extra of [{ role: 'admin' }, { id: 'usr_chosen' }, { wallets: [bob.wallet] }]) {
        const username = `u${randomBytes(6).toString('hex')}`;
        const response = await t.http('POST', '/api/v1/auth/register', {
          body: { username, password: 'correct horse battery staple', ...extra },
        });
        expect([response.status, response.body.type], JSON.stringify(extra)).toEqual([
          400,
          '/problems/validation-failed',
        ]);
        const key = Object.keys(extra)[0];
        expect(response.body.errors).toContainEqual({
          pointer: `/body/${key}`,
          detail: 'is not an allowed property',
        });
        // The username is still free: nothing was written.
        expect(
          (
            await t.http('POST', '/api/v1/auth/login', {
              body: { username, password: 'correct horse battery staple' },
            })
          ).status,
        ).toBe(401);
      }
    });

    it('refuses an owner, creator, id or supply chosen by the caller when minting an NFT', async () => {
      const before = await t.http('GET', '/api/v1/assets', { headers: bob.headers });
      for (const extra of [
        { owner: bob.wallet },
        { creator: alice.userId },
        { id: 'nft_chosen' },
        { totalSupply: '1000' },
        { kind: 'fungible' },
      ]) {
        const response = await t.http('POST', '/api/v1/nft/create', {
          body: { name: 'Forged', metadata: METADATA, collection: 'dawn-quest', ...extra },
          headers: bob.headers,
        });
        expect([response.status, response.body.type], JSON.stringify(extra)).toEqual([
          400,
          '/problems/validation-failed',
        ]);
      }
      expect((await t.http('GET', '/api/v1/assets', { headers: bob.headers })).body).toEqual(before.body);
    });

    it('refuses a transfer status, requester or id, a role change of oneself, and an owner for an application', async () => {
      const cases: [string, string, unknown][] = [
        [
          'POST',
          '/api/v1/transfer',
          { assetId: aliceNft, from: alice.wallet, to: bob.wallet, amount: '1', status: 'completed' },
        ],
        [
          'POST',
          '/api/v1/transfer',
          { assetId: aliceNft, from: alice.wallet, to: bob.wallet, amount: '1', requestedBy: alice.userId },
        ],
        ['POST', '/api/v1/applications', { name: 'x', redirectUris: [REDIRECT_URI], owner: alice.userId }],
        [
          'POST',
          '/api/v1/applications',
          { name: 'x', redirectUris: [REDIRECT_URI], clientId: 'gats-first-party' },
        ],
        ['POST', '/api/v1/api-keys', { name: 'x', userId: alice.userId }],
        ['POST', '/api/v1/api-keys', { name: 'x', clientId: 'gats-explorer' }],
        ['POST', '/identity/create', { did: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK' }],
      ];
      for (const [method, path, body] of cases) {
        const response = await t.http(method, path, {
          body,
          headers: { ...bob.headers, 'idempotency-key': `mass-${randomBytes(4).toString('hex')}` },
        });
        expect([response.status, response.body.type], `${path} ${JSON.stringify(body)}`).toEqual([
          400,
          '/problems/validation-failed',
        ]);
      }
      const selfPromotion = await t.http('PUT', `/api/v1/users/${bob.userId}/role`, {
        body: { role: 'admin' },
        headers: bob.headers,
      });
      expect(selfPromotion.status).toBe(403);
      expect((await t.http('GET', '/api/v1/me', { headers: bob.headers })).body.role).toBe('player');
    });
  });

  describe('function level (API5)', () => {
    async function thirdPartyToken(appOwnerToken: string, username: string): Promise<string> {
      const app = await t.http('POST', '/api/v1/applications', {
        body: { name: 'Companion', redirectUris: [REDIRECT_URI] },
        headers: bearer(appOwnerToken),
      });
      expect(app.status).toBe(201);
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const url = new URL('/authorize', t.baseUrl);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: app.body.clientId,
        redirect_uri: REDIRECT_URI,
        scope: 'openid assets:read',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'st',
      }).toString();
      const callback = await authorizeInBrowser(new Browser(t), url, username);
      const tokens = await t.http('POST', '/token', {
        form: {
          grant_type: 'authorization_code',
          code: callback.searchParams.get('code') as string,
          redirect_uri: REDIRECT_URI,
          client_id: app.body.clientId,
          code_verifier: verifier,
        },
      });
      expect(tokens.status, tokens.text).toBe(200);
      return tokens.body.access_token;
    }

    it("refuses account management to a token the user gave to another user's application (403)", async () => {
      const developer = await register(t);
      const player = await register(t);
      const token = await thirdPartyToken((await login(t, developer.username)).access_token, player.username);
      const ownKey = await t.http('POST', '/api/v1/api-keys', {
        body: { name: 'own' },
        headers: bearer((await login(t, player.username)).access_token),
      });
      expect(ownKey.status).toBe(201);

      const attempts: [string, string, unknown?][] = [
        ['POST', '/api/v1/api-keys', { name: 'stolen' }],
        ['GET', '/api/v1/api-keys'],
        ['DELETE', `/api/v1/api-keys/${ownKey.body.id}`],
        ['POST', '/api/v1/applications', { name: 'Rogue', redirectUris: [REDIRECT_URI] }],
        ['GET', '/api/v1/applications'],
      ];
      for (const [method, path, body] of attempts) {
        const response = await t.http(method, path, { body, headers: bearer(token) });
        expect([response.status, response.body?.type], `${method} ${path}`).toEqual([
          403,
          '/problems/forbidden',
        ]);
      }
      // The player's key still works, with the third-party token too (that is what it is for).
      const me = await t.http('GET', '/api/v1/me', {
        headers: { ...bearer(token), 'x-api-key': ownKey.body.key },
      });
      expect(me.status).toBe(200);
    });

    it("accepts account management with a token of the user's own application", async () => {
      const developer = await register(t);
      const ownerToken = (await login(t, developer.username)).access_token;
      const token = await thirdPartyToken(ownerToken, developer.username);
      const key = await t.http('POST', '/api/v1/api-keys', {
        body: { name: 'mine' },
        headers: bearer(token),
      });
      expect(key.status).toBe(201);
    });

    it('keeps role-restricted operations to their roles: collections, currencies, prices, roles', async () => {
      const cases: [string, string, unknown][] = [
        ['POST', '/api/v1/collections', { id: 'rogue', name: 'Rogue' }],
        [
          'POST',
          '/api/v1/currencies',
          {
            id: 'gems',
            name: 'Gems',
            symbol: 'GEM',
            decimals: 0,
            collection: 'dawn-quest',
            metadata: METADATA,
          },
        ],
        ['POST', '/api/v1/price/gold', { price: '1', currency: 'USD', source: 'me' }],
        ['PUT', `/api/v1/users/${alice.userId}/role`, { role: 'studio' }],
      ];
      for (const [method, path, body] of cases) {
        const response = await t.http(method, path, {
          body,
          headers: { ...bob.headers, 'idempotency-key': `role-${randomBytes(4).toString('hex')}` },
        });
        expect(response.status, path).toBe(403);
        expect(['/problems/role-not-allowed', '/problems/insufficient-scope'], path).toContain(
          response.body.type,
        );
      }
    });
  });
});

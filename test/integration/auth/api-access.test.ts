// Every way a protected call can fail (401 token or key, 403 scope or role, 429 rate limit), and the
// account operations around it: registration, login throttling, roles, applications, API keys.

import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KEY_CACHE_TTL_MS } from '../../../src/auth/api-keys.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { SigningKey } from '../../../src/db/entities/SigningKey.ts';
import { User } from '../../../src/db/entities/User.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, TEST_SECRET_KEY, type TestApp } from '../../helpers/app.ts';
import { useServiceCostPassword } from '../../helpers/fixture-passwords.ts';
import {
  bearer,
  createApiKey,
  credentials,
  login,
  newSession,
  PASSWORD,
  register,
  type Session,
  uniqueUsername,
} from './auth-helpers.ts';

describe.each(DB_KINDS)('protected API access on %s', (kind) => {
  let t: TestApp;
  let alice: Session;

  beforeAll(async () => {
    // Many logins from one address: keep the per-address limit out of the way here (tested below).
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000' });
    alice = await newSession(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function makeAdmin(userId: string): Promise<void> {
    await t.app.orm.em.fork().nativeUpdate(User, { id: userId }, { role: 'admin' });
  }

  /** Signs a token with the service's own active key, to forge everything but the signature. */
  async function signWithServiceKey(
    claims: Record<string, unknown>,
    header: Record<string, unknown> = {},
  ): Promise<string> {
    const [row] = await t.app.orm.em.fork().find(SigningKey, { retiredAt: null });
    const jwk = JSON.parse(
      createSecretBox(TEST_SECRET_KEY).open(row.privateJwkEncrypted, `signing-key:${row.kid}`),
    ) as JWK;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: t.baseUrl,
      aud: `${t.baseUrl}/api`,
      sub: alice.userId,
      user_id: alice.userId,
      role: 'player',
      client_id: 'gats-first-party',
      scope: 'assets:read',
      jti: 'forged',
      iat: now,
      exp: now + 600,
      ...claims,
    })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: row.kid, ...header })
      .sign(await importJWK(jwk, 'EdDSA'));
  }

  async function me(headers: Record<string, string>) {
    return t.http('GET', '/api/v1/me', { headers });
  }

  describe('bearer token', () => {
    it('is required: 401 with a bare Bearer challenge when absent', async () => {
      const response = await me({ 'x-api-key': alice.apiKey });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="gats"');
    });

    it('rejects malformed, unsigned, forged, expired, mis-addressed and mistyped tokens with invalid_token', async () => {
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const now = Math.floor(Date.now() / 1000);
      const otherKey = await new SignJWT({
        sub: alice.userId,
        user_id: alice.userId,
        role: 'admin',
        client_id: 'x',
        jti: 'j',
        scope: 'users:admin',
      })
        .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: 'evil' })
        .setIssuer(t.baseUrl)
        .setAudience(`${t.baseUrl}/api`)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey);
      const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(
        JSON.stringify({
          iss: t.baseUrl,
          aud: `${t.baseUrl}/api`,
          sub: alice.userId,
          user_id: alice.userId,
          role: 'admin',
          client_id: 'x',
          jti: 'j',
          iat: now,
          exp: now + 600,
        }),
      ).toString('base64url')}.`;
      const cases: Record<string, string> = {
        'not a JWT': 'Bearer not-a-jwt',
        'Basic scheme': `Basic ${Buffer.from('a:b').toString('base64')}`,
        'alg none': `Bearer ${unsigned}`,
        'another key': `Bearer ${otherKey}`,
        expired: `Bearer ${await signWithServiceKey({ iat: now - 3600, exp: now - 1800 })}`,
        'wrong audience': `Bearer ${await signWithServiceKey({ aud: 'https://elsewhere.example/api' })}`,
        'wrong issuer': `Bearer ${await signWithServiceKey({ iss: 'https://evil.example' })}`,
        'an ID token (typ JWT)': `Bearer ${await signWithServiceKey({}, { typ: 'JWT' })}`,
        'not yet valid': `Bearer ${await signWithServiceKey({ nbf: now + 3600 })}`,
      };
      for (const [name, authorization] of Object.entries(cases)) {
        const response = await me({ authorization, 'x-api-key': alice.apiKey });
        expect(response.status, name).toBe(401);
        expect(response.headers.get('www-authenticate'), name).toMatch(
          /^Bearer realm="gats", error="invalid_token"/,
        );
        expect(response.body.type, name).toBe('/problems/invalid-token');
      }
    });

    it('accepts a token signed with the service key and correct claims (the forgery above was only the claims)', async () => {
      expect((await me(credentials(await signWithServiceKey({}), alice.apiKey))).status).toBe(200);
    });
  });

  describe('API key', () => {
    it('is required, must exist, and must belong to the token user', async () => {
      const bob = await newSession(t);
      const cases: Record<string, Record<string, string>> = {
        missing: bearer(alice.accessToken),
        unknown: credentials(alice.accessToken, `gak_${'A'.repeat(43)}`),
        malformed: credentials(alice.accessToken, 'nope'),
        "another user's": credentials(alice.accessToken, bob.apiKey),
      };
      for (const [name, headers] of Object.entries(cases)) {
        const response = await me(headers);
        expect(response.status, name).toBe(401);
        expect(response.body.type, name).toBe('/problems/invalid-api-key');
      }
    });

    it('stops working the moment it is revoked, stays listed, and revoking is idempotent', async () => {
      const key = await createApiKey(t, alice.accessToken, 'short-lived');
      expect((await me(credentials(alice.accessToken, key.key))).status).toBe(200);
      expect(
        (await t.http('DELETE', `/api/v1/api-keys/${key.id}`, { headers: bearer(alice.accessToken) })).status,
      ).toBe(204);
      const after = await me(credentials(alice.accessToken, key.key));
      expect(after.status).toBe(401);
      expect(after.body.type).toBe('/problems/invalid-api-key');
      expect(
        (await t.http('DELETE', `/api/v1/api-keys/${key.id}`, { headers: bearer(alice.accessToken) })).status,
      ).toBe(204);
      const list = await t.http('GET', '/api/v1/api-keys', { headers: bearer(alice.accessToken) });
      const listed = list.body.data.find((k: { id: string }) => k.id === key.id);
      expect(listed.revokedAt).not.toBeNull();
      expect(JSON.stringify(list.body)).not.toContain(key.key);
    });

    it("reports another user's key as not found", async () => {
      const bob = await newSession(t);
      const response = await t.http('DELETE', `/api/v1/api-keys/${bob.apiKeyId}`, {
        headers: bearer(alice.accessToken),
      });
      expect(response.status).toBe(404);
      expect((await me(credentials(bob.accessToken, bob.apiKey))).status).toBe(200);
    });
  });

  describe('scopes and roles', () => {
    it('403 insufficient-scope when the token lacks a required scope', async () => {
      const narrow = await login(t, alice.username, 'openid');
      const response = await t.http('GET', '/api/v1/assets', {
        headers: credentials(narrow.access_token, alice.apiKey),
      });
      expect(response.status).toBe(403);
      expect(response.body.type).toBe('/problems/insufficient-scope');
      expect(response.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
    });

    it('403 role-not-allowed when the role may not perform the operation', async () => {
      const response = await t.http('POST', '/api/v1/collections', {
        headers: { ...credentials(alice.accessToken, alice.apiKey), 'idempotency-key': 'k1' },
        body: { id: 'dragons', name: 'Dragons' },
      });
      expect(response.status).toBe(403);
      expect(response.body.type).toBe('/problems/role-not-allowed');
    });

    it("lets admins change roles, revoking the user's refresh tokens, and applies the new role at once", async () => {
      const admin = await newSession(t);
      await makeAdmin(admin.userId);
      const adminTokens = await login(t, admin.username);
      expect(adminTokens.scope).toContain('users:admin');
      const adminHeaders = credentials(adminTokens.access_token, admin.apiKey);

      const carol = await newSession(t);
      const changed = await t.http('PUT', `/api/v1/users/${carol.userId}/role`, {
        headers: adminHeaders,
        body: { role: 'oracle' },
      });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body.role).toBe('oracle');
      const refreshed = await t.http('POST', '/token', {
        form: {
          grant_type: 'refresh_token',
          refresh_token: carol.refreshToken,
          client_id: 'gats-first-party',
        },
      });
      expect(refreshed.status).toBe(400);
      expect(refreshed.body.error).toBe('invalid_grant');
      expect((await login(t, carol.username)).scope).toContain('prices:write');

      // A player's own token cannot carry users:admin at all.
      const denied = await t.http('PUT', `/api/v1/users/${admin.userId}/role`, {
        headers: credentials(carol.accessToken, carol.apiKey),
        body: { role: 'player' },
      });
      expect(denied.status).toBe(403);

      const unknown = await t.http('PUT', '/api/v1/users/usr_01JD3Z5Q8W2E4R6T8Y0V2X4M6P/role', {
        headers: adminHeaders,
        body: { role: 'studio' },
      });
      expect(unknown.status).toBe(404);
    });

    it('lists users to admins only: people, oldest first, by role and username prefix, a page at a time', async () => {
      const admin = await newSession(t);
      await makeAdmin(admin.userId);
      const adminHeaders = credentials((await login(t, admin.username)).access_token, admin.apiKey);
      const prefix = `lu${randomBytes(3).toString('hex')}`;
      const first = await newSession(t, { username: `${prefix}-first` });
      const second = await newSession(t, { username: `${prefix.toUpperCase()}-second` });
      await t.app.orm.em.fork().nativeUpdate(User, { id: second.userId }, { role: 'studio' });
      // A service account is a user row too (svc_ id): never listed here.
      const account = await t.http('POST', '/api/v1/service-accounts', {
        headers: bearer(admin.accessToken),
        body: { name: `${prefix}-svc`, role: 'player', tokenEndpointAuthMethod: 'client_secret_basic' },
      });
      expect(account.status, account.text).toBe(201);

      const page1 = await t.http('GET', `/api/v1/users?username=${prefix}&limit=1`, {
        headers: adminHeaders,
      });
      expect(page1.status, page1.text).toBe(200);
      expect(page1.body.data.map((user: { id: string }) => user.id)).toEqual([first.userId]);
      expect(page1.body.data[0].wallets).toHaveLength(1);
      const page2 = await t.http(
        'GET',
        `/api/v1/users?username=${prefix}&limit=1&cursor=${page1.body.next_cursor}`,
        {
          headers: adminHeaders,
        },
      );
      expect(page2.body.data.map((user: { id: string; role: string }) => [user.id, user.role])).toEqual([
        [second.userId, 'studio'],
      ]);
      expect(page2.body.next_cursor).toBeNull();
      const studios = await t.http('GET', `/api/v1/users?username=${prefix}&role=studio`, {
        headers: adminHeaders,
      });
      expect(studios.body.data.map((user: { id: string }) => user.id)).toEqual([second.userId]);
      const everyone = await t.http('GET', '/api/v1/users?limit=100', { headers: adminHeaders });
      expect(everyone.body.data.some((user: { id: string }) => user.id.startsWith('svc_'))).toBe(false);

      // A player is refused (its token cannot carry users:admin), and a foreign cursor is the client's error.
      const refused = await t.http('GET', '/api/v1/users', {
        headers: credentials(first.accessToken, first.apiKey),
      });
      expect(refused.status).toBe(403);
      const badCursor = await t.http('GET', '/api/v1/users?cursor=bm90LWEtY3Vyc29y', {
        headers: adminHeaders,
      });
      expect(badCursor.status).toBe(400);
    });

    it('never demotes the last admin', async () => {
      const admins = await t.app.orm.em.fork().find(User, { role: 'admin' });
      const solo = await newSession(t);
      await t.app.orm.em.fork().nativeUpdate(User, { role: 'admin' }, { role: 'studio' });
      await makeAdmin(solo.userId);
      const tokens = await login(t, solo.username);
      const response = await t.http('PUT', `/api/v1/users/${solo.userId}/role`, {
        headers: credentials(tokens.access_token, solo.apiKey),
        body: { role: 'player' },
      });
      expect(response.status).toBe(409);
      expect(response.body.type).toBe('/problems/last-admin');
      for (const admin of admins) await makeAdmin(admin.id);
    });

    it('uses the current role: a demoted admin loses admin scopes at once, even with an older token', async () => {
      const dave = await newSession(t);
      await makeAdmin(dave.userId);
      const tokens = await login(t, dave.username);
      expect((await me(credentials(tokens.access_token, dave.apiKey))).body.role).toBe('admin');
      await t.app.orm.em.fork().nativeUpdate(User, { id: dave.userId }, { role: 'player' });
      // Past the API-key lookup cache's lifetime (KEY_CACHE_TTL_MS): only the clock moves on (timers
      // and I/O stay real), so the test need not sleep through it.
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
      try {
        vi.setSystemTime(Date.now() + KEY_CACHE_TTL_MS + 100);
        const response = await t.http('PUT', `/api/v1/users/${dave.userId}/role`, {
          headers: credentials(tokens.access_token, dave.apiKey),
          body: { role: 'admin' },
        });
        expect(response.status).toBe(403);
        expect((await me(credentials(tokens.access_token, dave.apiKey))).body.role).toBe('player');
      } finally {
        vi.useRealTimers();
      }
    });
  });

  describe('registration and login', () => {
    it('rejects a taken username in any case, a weak password and a password equal to the username', async () => {
      const taken = await t.http('POST', '/api/v1/auth/register', {
        body: { username: alice.username.toUpperCase(), password: PASSWORD },
      });
      expect(taken.status).toBe(409);
      expect(taken.body.type).toBe('/problems/username-taken');
      const short = await t.http('POST', '/api/v1/auth/register', {
        body: { username: uniqueUsername(), password: 'short' },
      });
      expect(short.status).toBe(400);
      const name = `${uniqueUsername()}_long`;
      const same = await t.http('POST', '/api/v1/auth/register', {
        body: { username: name, password: name },
      });
      expect(same.status).toBe(400);
      expect(JSON.stringify(same.body.errors)).toContain('/body/password');
    });

    it('answers wrong credentials the same way, in about the same time, whether or not the user exists', async () => {
      const attempt = async (username: string) => {
        const started = performance.now();
        const response = await t.http('POST', '/api/v1/auth/login', {
          body: { username, password: 'wrong password here' },
        });
        return { response, ms: performance.now() - started };
      };
      // Four failures: one short of the username lock-out tested below.
      // Stored at the service's cost (not the test app's): the time compared is the real one.
      const victim = await register(t);
      await useServiceCostPassword(t.app.orm as Orm, victim.id, PASSWORD);
      const known = [];
      const unknown = [];
      for (let i = 0; i < 4; i++) {
        known.push(await attempt(victim.username));
        unknown.push(await attempt(uniqueUsername('ghost')));
      }
      for (const { response } of [...known, ...unknown]) {
        expect(response.status).toBe(401);
        expect(response.body).toMatchObject({
          type: '/problems/invalid-credentials',
          detail: 'The username or password is incorrect.',
        });
      }
      const median = (xs: { ms: number }[]) =>
        xs.map((x) => x.ms).sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const ratio = median(known) / median(unknown);
      expect(ratio).toBeGreaterThan(0.5);
      expect(ratio).toBeLessThan(2);
    });

    it('locks a username out at this address after repeated failures, even with the right password', async () => {
      const user = await register(t);
      for (let i = 0; i < 5; i++) {
        expect(
          (
            await t.http('POST', '/api/v1/auth/login', {
              body: { username: user.username, password: 'wrong password here' },
            })
          ).status,
        ).toBe(401);
      }
      const locked = await t.http('POST', '/api/v1/auth/login', {
        body: { username: user.username, password: PASSWORD },
      });
      expect(locked.status).toBe(429);
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    });

    it('refreshes first-party tokens at /token, and a reused refresh token revokes the family', async () => {
      const session = await login(t, alice.username);
      const refresh = (token: string) =>
        t.http('POST', '/token', {
          form: { grant_type: 'refresh_token', refresh_token: token, client_id: 'gats-first-party' },
        });
      const first = await refresh(session.refresh_token);
      expect(first.status, first.text).toBe(200);
      expect(first.body.refresh_token).not.toBe(session.refresh_token);
      expect((await me(credentials(first.body.access_token, alice.apiKey))).status).toBe(200);
      expect((await refresh(session.refresh_token)).body.error).toBe('invalid_grant');
      expect((await refresh(first.body.refresh_token)).body.error).toBe('invalid_grant');
    });
  });

  describe('applications', () => {
    it('registers public and confidential clients with exact redirect URIs, lists and deletes them', async () => {
      const headers = bearer(alice.accessToken);
      const bad = await t.http('POST', '/api/v1/applications', {
        headers,
        body: { name: 'x', redirectUris: ['http://example.com/cb'] },
      });
      expect(bad.status).toBe(400);
      const confidential = await t.http('POST', '/api/v1/applications', {
        headers,
        body: { name: 'Server app', redirectUris: ['https://game.example.com/cb'], type: 'confidential' },
      });
      expect(confidential.status).toBe(201);
      expect(confidential.body.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const list = await t.http('GET', '/api/v1/applications', { headers });
      expect(list.body.data.map((a: { clientId: string }) => a.clientId)).toContain(
        confidential.body.clientId,
      );
      expect(JSON.stringify(list.body)).not.toContain(confidential.body.clientSecret);

      const bob = await newSession(t);
      expect(
        (
          await t.http('DELETE', `/api/v1/applications/${confidential.body.clientId}`, {
            headers: bearer(bob.accessToken),
          })
        ).status,
      ).toBe(404);
      expect((await t.http('DELETE', '/api/v1/applications/gats-first-party', { headers })).status).toBe(404);
      expect(
        (await t.http('DELETE', `/api/v1/applications/${confidential.body.clientId}`, { headers })).status,
      ).toBe(204);
      expect(
        (await t.http('GET', '/api/v1/applications', { headers })).body.data.map(
          (a: { clientId: string }) => a.clientId,
        ),
      ).not.toContain(confidential.body.clientId);
    });
  });

  describe('signing keys', () => {
    it('rotates: the new key signs, the old one stays published and its tokens stay valid', async () => {
      const before = await login(t, alice.username);
      const oldKid = JSON.parse(Buffer.from(before.access_token.split('.')[0], 'base64url').toString()).kid;
      const newKid = await t.app.auth.rotateSigningKey();
      expect(newKid).not.toBe(oldKid);

      const jwks = await t.http('GET', '/jwks');
      expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toEqual([newKid, oldKid]);
      expect(jwks.body.keys.every((k: Record<string, unknown>) => !('d' in k))).toBe(true);

      expect((await me(credentials(before.access_token, alice.apiKey))).status).toBe(200);
      const after = await login(t, alice.username);
      expect(JSON.parse(Buffer.from(after.access_token.split('.')[0], 'base64url').toString()).kid).toBe(
        newKid,
      );
      expect((await me(credentials(after.access_token, alice.apiKey))).status).toBe(200);
      // Refresh tokens issued before the rotation still work (they are opaque, stored state).
      const refreshed = await t.http('POST', '/token', {
        form: {
          grant_type: 'refresh_token',
          refresh_token: before.refresh_token,
          client_id: 'gats-first-party',
        },
      });
      expect(refreshed.status).toBe(200);
    });

    it('publishes only public Ed25519 keys', async () => {
      const jwks = await t.http('GET', '/jwks');
      for (const key of jwks.body.keys)
        expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
      const { publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      expect(Object.keys(await exportJWK(publicKey)).sort()).toEqual(['crv', 'kty', 'x']);
    });
  });
});

describe.each(DB_KINDS)('rate limits on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, {
      RATE_LIMIT_REQUESTS: '3',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      LOGIN_RATE_LIMIT_REQUESTS: '3',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('limits each API key, with RateLimit headers on every answer and Retry-After on 429', async () => {
    const session = await newSession(t);
    const remaining = [];
    for (let i = 0; i < 3; i++) {
      const response = await t.http('GET', '/api/v1/me', {
        headers: credentials(session.accessToken, session.apiKey),
      });
      expect(response.status).toBe(200);
      // The key's policy, then the user's (all of its keys together, 13.5).
      expect(response.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60, "user";q=1200;w=60');
      remaining.push(/r=(\d+)/.exec(response.headers.get('ratelimit') as string)?.[1]);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await t.http('GET', '/api/v1/me', {
      headers: credentials(session.accessToken, session.apiKey),
    });
    expect(limited.status).toBe(429);
    expect(limited.body.type).toBe('/problems/rate-limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
  });

  it('limits login attempts per client address', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (
          await t.http('POST', '/api/v1/auth/login', {
            body: { username: 'nobody_here', password: 'whatever password' },
          })
        ).status,
      );
    }
    // newSession above used one login; two more fail with 401, then the address is limited.
    expect(statuses).toEqual([401, 401, 429, 429]);
  });
});

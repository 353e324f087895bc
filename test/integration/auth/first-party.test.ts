// Registration, first-party login, API keys and the protected call that needs both credentials.
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { createApiKey, credentials, login, register, uniqueUsername } from './auth-helpers.ts';

describe.each(DB_KINDS)('first-party access on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('registers, logs in, creates an API key and calls a protected endpoint', async () => {
    const username = uniqueUsername('alice');
    const user = await register(t, username);
    expect(user).toMatchObject({ username, role: 'player' });

    const tokens = await login(t, username);
    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.scope.split(' ').sort()).toEqual(
      ['openid', 'offline_access', 'assets:read', 'assets:write', 'transfers:write', 'identity:write'].sort(),
    );
    const header = decodeProtectedHeader(tokens.access_token);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'at+jwt' });
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      iss: t.baseUrl,
      sub: user.id,
      user_id: user.id,
      role: 'player',
      client_id: 'gats-first-party',
      aud: `${t.baseUrl}/api`,
    });
    expect(Number(claims.exp) - Number(claims.iat)).toBe(900);

    const key = await createApiKey(t, tokens.access_token);
    expect(key.key).toMatch(/^gak_[A-Za-z0-9_-]{43}$/);

    const me = await t.http('GET', '/api/v1/me', { headers: credentials(tokens.access_token, key.key) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, username, role: 'player' });
    expect(me.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+, "user";r=\d+;t=\d+$/);
    expect(me.headers.get('ratelimit-policy')).toBe('"default";q=600;w=60, "user";q=1200;w=60');
  });
});

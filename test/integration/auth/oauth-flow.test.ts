// The OAuth 2.0 authorization code flow with PKCE, driven by a real client (openid-client 6)
// through the real login and consent pages, then the protected API with the token it got.
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  authorizeInBrowser,
  Browser,
  checkedFetch,
  createApiKey,
  credentials,
  csrfFrom,
  interactionPath,
  login,
  newSession,
  PASSWORD,
  register,
  type Session,
} from './auth-helpers.ts';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';

describe.each(DB_KINDS)('authorization code flow on %s', (kind) => {
  let t: TestApp;
  let owner: Session;
  let clientId: string;
  let config: client.Configuration;

  beforeAll(async () => {
    t = await startTestApp(kind);
    owner = await newSession(t);
    const created = await t.http('POST', '/api/v1/applications', {
      body: { name: 'Dragon <Quest> Companion', redirectUris: [REDIRECT_URI, 'http://localhost:9/other'] },
      headers: { authorization: `Bearer ${owner.accessToken}` },
    });
    expect(created.status, created.text).toBe(201);
    clientId = created.body.clientId;
    config = await client.discovery(
      new URL(t.baseUrl),
      clientId,
      { id_token_signed_response_alg: 'EdDSA' },
      client.None(),
      {
        execute: [client.allowInsecureRequests],
        [client.customFetch]: checkedFetch,
      },
    );
    config[client.customFetch] = checkedFetch;
  });
  afterAll(async () => {
    await t?.close();
  });

  async function authorizationRequest(parameters: Record<string, string> = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid offline_access assets:read transfers:write',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...parameters,
    });
    return { url, verifier, state };
  }

  async function codeFor(username: string, parameters: Record<string, string> = {}) {
    const request = await authorizationRequest(parameters);
    const callback = await authorizeInBrowser(new Browser(t), request.url, username);
    return { ...request, callback, code: callback.searchParams.get('code') as string };
  }

  function tokenRequest(form: Record<string, string>) {
    return t.http('POST', '/token', {
      form: { client_id: clientId, redirect_uri: REDIRECT_URI, grant_type: 'authorization_code', ...form },
    });
  }

  it('issues tokens through the login and consent pages, and the API accepts them with an API key', async () => {
    const user = await register(t);
    const { callback, verifier, state } = await codeFor(user.username);
    expect(callback.origin + callback.pathname).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('iss')).toBe(t.baseUrl);

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.refresh_token).toBeTruthy();
    expect(tokens.claims()?.sub).toBe(user.id);
    const access = decodeJwt(tokens.access_token);
    expect(access).toMatchObject({
      sub: user.id,
      user_id: user.id,
      role: 'player',
      client_id: clientId,
      aud: `${t.baseUrl}/api`,
    });
    expect(String(access.scope).split(' ').sort()).toEqual(['assets:read', 'transfers:write']);

    // The application is another user's: its token may call the API with the user's key, but may
    // not manage the user's keys (the user creates the key through the first-party login).
    const refused = await t.http('POST', '/api/v1/api-keys', {
      body: { name: 'companion' },
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect([refused.status, refused.body.type]).toEqual([403, '/problems/forbidden']);
    const key = await createApiKey(t, (await login(t, user.username)).access_token, 'companion');
    const me = await t.http('GET', '/api/v1/me', { headers: credentials(tokens.access_token, key.key) });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(user.id);
  });

  it('escapes what it shows: the application name is rendered as text', async () => {
    const { url } = await authorizationRequest();
    const { response } = await new Browser(t).follow(url.toString());
    expect(response.text).toContain('Dragon &lt;Quest&gt; Companion');
    expect(response.text).not.toContain('<Quest>');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
  });

  it('never grants more than the role allows, whatever the client asks', async () => {
    const user = await register(t);
    const { callback, verifier, state } = await codeFor(user.username, {
      scope: 'openid assets:read prices:write users:admin',
    });
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(decodeJwt(tokens.access_token).scope).toBe('assets:read');
  });

  it('returns state unchanged', async () => {
    const user = await register(t);
    const state = 'st ate/ü?&=+%20"<>';
    const { callback } = await codeFor(user.username, { state });
    expect(callback.searchParams.get('state')).toBe(state);
  });

  it('rejects a reused authorization code with invalid_grant', async () => {
    const user = await register(t);
    const { code, verifier } = await codeFor(user.username);
    const first = await tokenRequest({ code, code_verifier: verifier });
    expect(first.status, first.text).toBe(200);
    const second = await tokenRequest({ code, code_verifier: verifier });
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_grant');
  });

  it('rejects a wrong or missing PKCE verifier with invalid_grant', async () => {
    const user = await register(t);
    const { code } = await codeFor(user.username);
    const wrong = await tokenRequest({ code, code_verifier: client.randomPKCECodeVerifier() });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    const again = await codeFor(user.username);
    const missing = await tokenRequest({ code: again.code });
    expect(missing.status).toBe(400);
    expect(['invalid_grant', 'invalid_request']).toContain(missing.body.error);
  });

  it('refuses an authorization request without PKCE, redirecting the error to the client', async () => {
    const url = new URL('/authorize', t.baseUrl);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
      state: 'abc',
    }).toString();
    const response = await new Browser(t).request('GET', url.href, { unchecked: true });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location') as string);
    expect(location.origin + location.pathname).toBe(REDIRECT_URI);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('abc');
  });

  it('shows an error page, and never redirects, for an unregistered redirect_uri or an unknown client', async () => {
    for (const parameters of [
      { redirect_uri: 'http://127.0.0.1:9/callback/other' },
      { redirect_uri: 'http://127.0.0.1:9/callback?x=1' },
      { client_id: 'app_unknown' },
    ]) {
      const { url } = await authorizationRequest();
      for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
      const response = await new Browser(t).request('GET', url.href, { unchecked: true });
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });

  it('refuses a request without response_type', async () => {
    const { url } = await authorizationRequest();
    url.searchParams.delete('response_type');
    const response = await new Browser(t).request('GET', url.href, { unchecked: true });
    if (response.status === 303) {
      const location = new URL(response.headers.get('location') as string);
      expect(['invalid_request', 'unsupported_response_type']).toContain(location.searchParams.get('error'));
    } else {
      expect(response.status).toBe(400);
    }
  });

  it('rotates refresh tokens, and reusing a rotated one revokes the whole family', async () => {
    const user = await register(t);
    const { callback, verifier, state } = await codeFor(user.username);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const first = tokens.refresh_token as string;
    const refreshed = await client.refreshTokenGrant(config, first);
    const second = refreshed.refresh_token as string;
    expect(second).toBeTruthy();
    expect(second).not.toBe(first);
    expect(decodeJwt(refreshed.access_token).sub).toBe(user.id);

    const reuse = await t.http('POST', '/token', {
      form: { grant_type: 'refresh_token', refresh_token: first, client_id: clientId },
    });
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    // The family is revoked: the newest refresh token is dead too.
    const after = await t.http('POST', '/token', {
      form: { grant_type: 'refresh_token', refresh_token: second, client_id: clientId },
    });
    expect(after.status).toBe(400);
    expect(after.body.error).toBe('invalid_grant');
  });

  it('protects the forms: a wrong CSRF token is 403, another browser (no interaction cookie) is 400', async () => {
    const user = await register(t);
    const { url } = await authorizationRequest();
    const browser = new Browser(t);
    const { response } = await browser.follow(url.toString());
    const action = interactionPath(response.text, 'login');
    const forged = await browser.request('POST', action, {
      form: { username: user.username, password: 'correct horse battery staple', csrf: 'A'.repeat(43) },
    });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('content-type')).toMatch(/^text\/html/);
    const csrf = csrfFrom(response.text);
    const elsewhere = await new Browser(t).request('POST', action, {
      form: { username: user.username, password: 'correct horse battery staple', csrf },
    });
    expect(elsewhere.status).toBe(400);
    const wrongPassword = await browser.request('POST', action, {
      form: { username: user.username, password: 'not the password!', csrf },
    });
    expect(wrongPassword.status).toBe(200);
    expect(wrongPassword.text).toContain('Invalid username or password.');
    const frames = response.headers.get('x-frame-options');
    expect(frames).toBe('DENY');
  });

  it('lets the user decline: access_denied goes back to the client', async () => {
    const user = await register(t);
    const { url, state } = await authorizationRequest();
    const browser = new Browser(t);
    const { response } = await browser.follow(url.toString());
    const login = await browser.request('POST', interactionPath(response.text, 'login'), {
      form: { username: user.username, password: PASSWORD, csrf: csrfFrom(response.text) },
    });
    const consentPage = await browser.follow(login.headers.get('location') as string);
    const abortPath = /href="(\/interaction\/[^"]+\/abort)"/.exec(consentPage.response.text)?.[1] as string;
    const abort = await browser.request('GET', abortPath);
    expect(abort.status).toBe(303);
    const { location } = await browser.follow(abort.headers.get('location') as string);
    expect(location?.searchParams.get('error')).toBe('access_denied');
    expect(location?.searchParams.get('state')).toBe(state);
  });
});

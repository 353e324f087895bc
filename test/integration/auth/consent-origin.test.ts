// Issue 13.10: a third-party application named like the first-party explorer got a consent page
// identical to the explorer's. Now names of the service and its own clients are reserved (however
// cased, spaced or spelled with look-alike letters), and the sign-in and consent pages say who
// registered a third-party client. Through the real pages and API, every response checked against
// the contract.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CLIENT_ID, DEMO_REDIRECT_URIS, ensureDemoClient } from '../../../src/auth/applications.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { Browser, bearer, csrfFrom, interactionPath, login, PASSWORD, register } from './auth-helpers.ts';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';

function authorizeUrl(t: TestApp, clientId: string, redirectUri: string): string {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL('/authorize', t.baseUrl);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid assets:read',
    state: 'xyz',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  return url.href;
}

/** Signs `username` in at the authorize step; returns the sign-in page's and the consent page's HTML. */
async function pagesFor(t: TestApp, clientId: string, redirectUri: string, username: string) {
  const browser = new Browser(t);
  const { response: signIn } = await browser.follow(authorizeUrl(t, clientId, redirectUri));
  expect(signIn.status, signIn.text).toBe(200);
  const posted = await browser.request('POST', interactionPath(signIn.text, 'login'), {
    form: { username, password: PASSWORD, csrf: csrfFrom(signIn.text) },
  });
  expect(posted.status).toBe(303);
  const { response: consent } = await browser.follow(posted.headers.get('location') as string);
  expect(consent.status).toBe(200);
  expect(consent.text).toContain('/confirm"');
  return { signIn: signIn.text, consent: consent.text };
}

describe.each(DB_KINDS)('who is asking, on the sign-in and consent pages, on %s', (kind) => {
  let t: TestApp;
  let developer: { username: string; token: string };
  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000' });
    const user = await register(t);
    developer = { username: user.username, token: (await login(t, user.username)).access_token };
  });
  afterAll(async () => {
    await t?.close();
  });

  const create = (name: string) =>
    t.http('POST', '/api/v1/applications', {
      body: { name, redirectUris: [REDIRECT_URI] },
      headers: bearer(developer.token),
    });

  it("13.10: refuses the service's and its own clients' names, however cased, spaced or spelled with look-alikes", async () => {
    for (const name of [
      'GATS Explorer',
      'gats explorer',
      'G.A.T.S. Explorer',
      'GАTS Ехрlorer', // Cyrillic А, Е, х, р
      'ＧＡＴＳ wallet', // fullwidth
      'Game Asset Tracking Service',
      'The game-asset-tracking-service companion',
      'GATS demo client',
      'gats',
    ]) {
      const response = await create(name);
      expect([response.status, response.body.type], name).toEqual([400, '/problems/validation-failed']);
      expect(response.body.errors[0].pointer, name).toBe('/body/name');
    }
    // A name that merely contains the letters is fine.
    expect((await create('Gatsby Companion')).status).toBe(201);
  });

  it('13.10: a third-party client is shown as third party, with the user who registered it; the explorer asks no consent', async () => {
    const app = await create('Asset Explorer');
    expect(app.status).toBe(201);
    const victim = await register(t);

    const third = await pagesFor(t, app.body.clientId, REDIRECT_URI, victim.username);
    for (const page of [third.signIn, third.consent]) {
      expect(page).toContain('third-party application');
      expect(page).toContain(`registered by the user <strong>${developer.username}</strong>`);
      expect(page).toContain(app.body.clientId);
    }
    expect(third.consent).toContain('Authorize Asset Explorer (third party)');

    // Issue 37: the explorer is the service, so after the sign-in page it asks for no consent: the
    // browser goes straight back to the explorer's registered redirect URI with a code.
    const browser = new Browser(t);
    const { response: signIn } = await browser.follow(
      authorizeUrl(t, 'gats-explorer', `${t.baseUrl}/explorer/callback`),
    );
    expect(signIn.text).not.toContain('third-party');
    let response = await browser.request('POST', interactionPath(signIn.text, 'login'), {
      form: { username: victim.username, password: PASSWORD, csrf: csrfFrom(signIn.text) },
    });
    const visited: string[] = [];
    while ((response.status === 303 || response.status === 302) && visited.length < 10) {
      const location = new URL(response.headers.get('location') as string, t.baseUrl);
      visited.push(location.pathname);
      if (location.pathname === '/explorer/callback') {
        expect(location.searchParams.get('code')).toBeTruthy();
        break;
      }
      response = await browser.request('GET', location.href);
      expect(response.text ?? '').not.toContain('/confirm"');
    }
    expect(visited.at(-1), visited.join(' -> ')).toBe('/explorer/callback');

    // The demo client is the service's too, but its redirect URIs are loopback ports anything on the
    // machine may listen on: it keeps the consent page (pagesFor expects it).
    await ensureDemoClient(t.app.orm.em.fork());
    const demo = await pagesFor(t, DEMO_CLIENT_ID, DEMO_REDIRECT_URIS[1], victim.username);
    expect(demo.consent).toContain('Authorize GATS demo client');
  });
});

// OWASP API8 (security misconfiguration): safe response headers on every kind of response (JSON,
// problem, HTML reference, sign-in page, explorer, OAuth endpoints) and a CORS policy that trusts
// only the exact origins of CORS_ORIGINS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { credentials, newSession, type Session } from '../integration/auth/auth-helpers.ts';

const kind = DB_KINDS[0];
const ALLOWED = 'https://game.example.com';

function expectSafeHeaders(headers: Headers, what: string): void {
  expect(headers.get('x-content-type-options'), what).toBe('nosniff');
  expect(headers.get('x-frame-options'), what).toBe('DENY');
  expect(headers.get('referrer-policy'), what).toBe('no-referrer');
  expect(headers.get('strict-transport-security'), what).toMatch(/^max-age=\d{7,}/);
  expect(headers.get('x-powered-by'), what).toBeNull();
  const csp = headers.get('content-security-policy') ?? '';
  // frame-ancestors does not fall back to default-src: every policy must name it.
  expect(csp, what).toMatch(/frame-ancestors 'none'/);
  // No page may run inline or injected script, except the generated references (see SECURITY.md).
  if (!what.includes('reference')) expect(csp, what).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);
}

describe(`security headers and CORS on ${kind}`, () => {
  let t: TestApp;
  let alice: Session;
  beforeAll(async () => {
    t = await startTestApp(kind, { CORS_ORIGINS: `${ALLOWED}, https://studio.example.com` });
    alice = await newSession(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sets them on API answers, problems, HTML references, the explorer and the OAuth endpoints', async () => {
    const responses = {
      'JSON API answer': await t.http('GET', '/api/v1/me', {
        headers: credentials(alice.accessToken, alice.apiKey),
      }),
      '401 problem': await t.http('GET', '/api/v1/me'),
      '404 problem': await t.http('GET', '/no/such/route'),
      'docs index (HTML)': await t.http('GET', '/docs'),
      'REST reference (HTML)': await t.http('GET', '/docs/openapi', { unchecked: true }),
      'explorer (HTML)': await t.http('GET', '/explorer/', { unchecked: true }),
      'OpenID discovery': await t.http('GET', '/.well-known/openid-configuration'),
      JWKS: await t.http('GET', '/jwks'),
      'authorize error page (HTML)': await t.http('GET', '/authorize?client_id=nobody', { unchecked: true }),
      'token endpoint error': await t.http('POST', '/token', { form: { grant_type: 'password' } }),
      metrics: await t.http('GET', '/metrics'),
    };
    for (const [what, response] of Object.entries(responses)) {
      expect(response.status, what).toBeLessThan(500);
      expectSafeHeaders(response.headers, what);
    }
    expect(responses['JSON API answer'].status).toBe(200);
    expect(responses['JSON API answer'].headers.get('content-security-policy')).toBe(
      "default-src 'none'; frame-ancestors 'none'",
    );
  });

  it('lets an allowed origin read answers, with Vary: Origin and the headers clients need exposed', async () => {
    const response = await t.http('GET', '/healthz', { headers: { origin: ALLOWED } });
    expect(response.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(response.headers.get('vary')).toMatch(/Origin/);
    expect(response.headers.get('access-control-expose-headers')).toMatch(/RateLimit/);
    // Credentials travel in headers, never cookies: no credentialed CORS.
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('gives any other origin no CORS header at all, not even a wildcard', async () => {
    for (const origin of ['https://evil.example', `${ALLOWED}.evil.example`, 'null', ALLOWED.toUpperCase()]) {
      const response = await t.http('GET', '/healthz', { headers: { origin } });
      expect(response.headers.get('access-control-allow-origin'), origin).toBeNull();
      expect(response.headers.get('access-control-allow-methods'), origin).toBeNull();
    }
  });

  it('answers the preflight of an allowed origin with 204 and the methods and headers the API uses', async () => {
    const response = await t.http('OPTIONS', '/api/v1/transfer', {
      headers: {
        origin: ALLOWED,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, x-api-key, content-type, idempotency-key',
      },
      unchecked: true,
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(response.headers.get('access-control-allow-methods')).toMatch(/POST/);
    const allowedHeaders = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const header of ['authorization', 'x-api-key', 'content-type', 'idempotency-key']) {
      expect(allowedHeaders).toContain(header);
    }
  });

  it('refuses the preflight of another origin: no 2xx, no CORS headers', async () => {
    const response = await t.http('OPTIONS', '/api/v1/transfer', {
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      unchecked: true,
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-allow-methods')).toBeNull();
  });
});

describe(`CORS by default on ${kind}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('allows no cross-origin access when CORS_ORIGINS is unset', async () => {
    const response = await t.http('GET', '/healthz', { headers: { origin: 'http://localhost:5173' } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });
});

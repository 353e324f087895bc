// The HTTP edge on its own: operations endpoints, problem+json for every kind of bad request,
// request ids and safe headers. Every response is checked against the contract by the helper.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';

describe.each(DB_KINDS)('HTTP edge on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers health and readiness, the latter after asking the database', async () => {
    expect((await t.http('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await t.http('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', checks: { database: 'ok' } });
  });

  it('exposes Prometheus metrics that count requests by operation', async () => {
    await t.http('GET', '/healthz');
    const metrics = await t.http('GET', '/metrics');
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(metrics.text).toMatch(
      /http_requests_total\{method="GET",operation="getHealth",status="200"\} \d+/,
    );
  });

  it('publishes the bundled contracts and the HTML references', async () => {
    const openapi = await t.http('GET', '/openapi.json');
    // The bundled contract, with this deployment's PUBLIC_URL as its server (16.4).
    const bundled = JSON.parse(readFileSync('generated/openapi/openapi.json', 'utf8'));
    expect({ ...openapi.body, servers: bundled.servers, components: bundled.components }).toEqual(bundled);
    expect(openapi.body.servers).toEqual([{ url: t.baseUrl, description: expect.any(String) }]);
    const asyncapi = await t.http('GET', '/asyncapi.json');
    expect((asyncapi.body as { asyncapi: string }).asyncapi).toMatch(/^3\./);
    const index = await t.http('GET', '/docs');
    expect(index.text).toContain('href="/docs/openapi"');
    const reference = await t.http('GET', '/docs/openapi', { unchecked: true });
    expect(reference.status).toBe(200);
    expect(reference.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('answers an unknown path with a 404 problem', async () => {
    const response = await t.http('GET', '/no/such/thing');
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({
      type: '/problems/route-not-found',
      status: 404,
      instance: '/no/such/thing',
    });
  });

  it('answers a wrong method with 405 and an Allow header', async () => {
    const response = await t.http('DELETE', '/healthz');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(response.body).toMatchObject({ type: '/problems/method-not-allowed', status: 405 });
  });

  it('rejects malformed JSON with a 400 problem', async () => {
    const response = await t.http('POST', '/api/v1/auth/register', {
      raw: '{"username": "ann", ',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ type: '/problems/malformed-json', status: 400 });
  });

  it('rejects JSON that is not an object with a 400 problem', async () => {
    const response = await t.http('POST', '/api/v1/auth/register', {
      raw: '"just a string"',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ type: '/problems/malformed-json' });
  });

  it('rejects a body of the wrong content type with 415', async () => {
    const response = await t.http('POST', '/api/v1/auth/register', {
      raw: 'username=ann&password=correct-horse-battery',
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(415);
    expect(response.body).toMatchObject({ type: '/problems/unsupported-media-type' });
  });

  it('names every invalid field: unknown properties and wrong types', async () => {
    const response = await t.http('POST', '/api/v1/auth/register', {
      body: { username: 42, password: 'correct-horse-battery', admin: true },
    });
    expect(response.status).toBe(400);
    expect(response.body.type).toBe('/problems/validation-failed');
    const pointers = (response.body.errors as { pointer: string }[]).map((error) => error.pointer).sort();
    expect(pointers).toEqual(['/body/admin', '/body/username']);
  });

  it('rejects an oversized body with 413 before reading it all', async () => {
    const response = await t.http('POST', '/api/v1/auth/register', {
      body: { username: 'ann', password: 'x'.repeat(200 * 1024) },
    });
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ type: '/problems/payload-too-large', status: 413 });
  });

  it('refuses a protected operation without credentials, saying how to authenticate', async () => {
    const response = await t.http('GET', '/api/v1/assets');
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('echoes a safe X-Request-Id and replaces an unsafe one', async () => {
    const safe = await t.http('GET', '/healthz', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(safe.headers.get('x-request-id')).toBe('abc-123');
    const unsafe = await t.http('GET', '/healthz', { headers: { 'X-Request-Id': 'a b<script>' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sets safe headers on every response', async () => {
    const response = await t.http('GET', '/healthz');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(response.headers.get('x-powered-by')).toBeNull();
  });
});

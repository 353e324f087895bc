// Issue 38: the official client's retry rules, against answers made up by a fetch double: a 429
// waited out by its Retry-After, one longer than the cap answered to the caller, a 503 retried with
// the same Idempotency-Key for a keyed write and not for an unkeyed one.
import { describe, expect, it } from 'vitest';
import { createGatsClient, type GatsProblemError, unwrap } from '../../clients/typescript/src/index.ts';

describe('the official TypeScript client, retry rules', () => {
  const problem = (status: number, retryAfter?: string) =>
    new Response(JSON.stringify({ type: '/problems/rate-limited', title: 'Too many requests', status }), {
      status,
      headers: {
        'content-type': 'application/problem+json',
        ...(retryAfter ? { 'retry-after': retryAfter } : {}),
      },
    });

  it('waits Retry-After after a 429, and answers a wait longer than the cap to the caller', async () => {
    const answers = [
      problem(429, '1'),
      new Response('{"id":"x"}', { status: 200, headers: { 'content-type': 'application/json' } }),
    ];
    const gats = createGatsClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch: async () => answers.shift() as Response,
    });
    const started = Date.now();
    const { response } = await gats.GET('/api/v1/me');
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);

    const capped = createGatsClient({
      baseUrl: 'http://127.0.0.1:9',
      retry: { maxRetryAfterMs: 5000 },
      fetch: async () => problem(429, '120'),
    });
    const error = (await unwrap(capped.GET('/api/v1/me')).catch(
      (caught: unknown) => caught,
    )) as GatsProblemError;
    expect([error.status, error.retryAfterMs, error.type]).toEqual([429, 120_000, '/problems/rate-limited']);
  });

  it('retries a 503 of a keyed write with its key, and not that of an unkeyed one', async () => {
    const keys: (string | null)[] = [];
    const answers = [problem(503, '0'), new Response(null, { status: 204 })];
    const gats = createGatsClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch: async (request) => {
        keys.push(request.headers.get('idempotency-key'));
        return answers.shift() ?? problem(503, '0');
      },
    });
    const keyed = await gats.POST('/api/v1/transfer', {
      body: { assetId: 'gold', from: '0x0', to: '0x0', amount: '1' },
    });
    expect(keyed.response.status).toBe(204);
    expect(new Set(keys).size).toBe(1);
    const unkeyed = await gats.POST('/api/v1/webhooks', {
      body: { url: 'https://example.com/hook', eventTypes: ['newTransfer'] },
    });
    expect(unkeyed.response.status).toBe(503);
    expect(keys).toHaveLength(3);
  });
});

// Issue 13.12: login throttling per username across client addresses. Each request comes from its
// own loopback address (127.0.0.N, all routed to the server on 127.0.0.1), as an attacker with many
// addresses would send them; every answer is checked against the contract. In memory and in Redis
// (the counters every instance shares).
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backoffSeconds } from '../../../src/auth/login-throttle.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { assertMatchesContract } from '../../helpers/contract.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { PASSWORD, register } from './auth-helpers.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** POST /api/v1/auth/login from `localAddress`, checked against the contract. */
function loginFrom(
  t: TestApp,
  localAddress: string,
  username: string,
  password: string,
): Promise<{ status: number; retryAfter: number; body: any }> {
  const url = new URL('/api/v1/auth/login', t.baseUrl);
  const payload = JSON.stringify({ username, password });
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const body = text ? JSON.parse(text) : undefined;
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          try {
            assertMatchesContract('POST', url.pathname, {
              status: res.statusCode as number,
              contentType: res.headers['content-type'] ?? '',
              body,
              headers,
            });
          } catch (error) {
            reject(error);
            return;
          }
          resolve({ status: res.statusCode as number, retryAfter: Number(res.headers['retry-after']), body });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('13.12: the backoff schedule', () => {
  it('13.12: lets 10 failures of a username through, then doubles the wait from 2 s up to 5 min', () => {
    expect([1, 10].map(backoffSeconds)).toEqual([0, 0]);
    expect([11, 12, 13, 18, 19, 40].map(backoffSeconds)).toEqual([2, 4, 8, 256, 300, 300]);
  });
});

describe.each([
  ['memory', {}],
  ['redis', { REDIS_URL }],
] as const)('13.12: login backoff across addresses (%s counters)', (_label, env) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(DB_KINDS[0], env);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('13.12: a username that failed from many addresses waits before the next attempt from a new one', async () => {
    const user = await register(t);
    // 5 failures from each of two addresses lock those two out (per address and username), one more
    // from a third address is the 11th failure of the username: the first past the free ones.
    for (const address of ['127.0.0.11', '127.0.0.12']) {
      for (let i = 0; i < 5; i++) {
        expect((await loginFrom(t, address, user.username, 'wrong password here')).status).toBe(401);
      }
    }
    expect((await loginFrom(t, '127.0.0.13', user.username, 'wrong password here')).status).toBe(401);

    // Even the right password, from yet another address, waits out the backoff.
    const waiting = await loginFrom(t, '127.0.0.14', user.username, PASSWORD);
    expect([waiting.status, waiting.body.type]).toEqual([429, '/problems/rate-limited']);
    expect(waiting.retryAfter).toBeGreaterThan(0);
    expect(waiting.retryAfter).toBeLessThanOrEqual(2);

    // After it, the owner gets in (a bounded wait, not a lockout an attacker can prolong at will).
    await new Promise((resolve) => setTimeout(resolve, waiting.retryAfter * 1000 + 100));
    const after = await loginFrom(t, '127.0.0.14', user.username, PASSWORD);
    expect(after.status).toBe(200);
  });

  it('13.12: another username is not slowed by those failures', async () => {
    const victim = await register(t);
    const other = await register(t);
    for (let i = 0; i < 11; i++) {
      const address = `127.0.1.${10 + Math.floor(i / 5)}`;
      expect((await loginFrom(t, address, victim.username, 'wrong password here')).status).toBe(401);
    }
    expect((await loginFrom(t, '127.0.1.20', other.username, PASSWORD)).status).toBe(200);
  });
});

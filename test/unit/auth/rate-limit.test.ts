// Fixed-window counters, in memory and in Redis (the same behaviour), and the header format.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMemoryRateLimiter,
  createRedisRateLimiter,
  type RateLimiter,
  rateLimitedError,
  rateLimitHeaders,
} from '../../../src/auth/rate-limit.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { createRedisLink } from '../../../src/redis/link.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function redisAnswers(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

const kinds: [string, () => Promise<RateLimiter>][] = [['memory', async () => createMemoryRateLimiter()]];
if (await redisAnswers())
  kinds.push([
    'redis',
    async () => {
      const link = createRedisLink(
        REDIS_URL,
        `gats-test-${randomBytes(4).toString('hex')}:`,
        createLogger('silent'),
      );
      const limiter = createRedisRateLimiter(link, () => {
        throw new Error('the Redis limiter fell back to memory while Redis answers');
      });
      await link.ready(2_000);
      return {
        ...limiter,
        async close() {
          await limiter.close();
          await link.close();
        },
      };
    },
  ]);

describe.each(kinds)('%s rate limiter', (_name, create) => {
  let limiter: RateLimiter;
  beforeAll(async () => {
    limiter = await create();
  });
  afterAll(() => limiter.close());

  it('allows `limit` hits per window, then refuses until it resets', async () => {
    const key = `test:${randomBytes(6).toString('hex')}`;
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await limiter.hit(key, 3, 60));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
    expect(results[3].resetSeconds).toBeGreaterThan(0);
    expect(results[3].resetSeconds).toBeLessThanOrEqual(60);
  });

  it('starts a new window after the old one expires', async () => {
    const key = `test:${randomBytes(6).toString('hex')}`;
    expect((await limiter.hit(key, 1, 1)).allowed).toBe(true);
    expect((await limiter.hit(key, 1, 1)).allowed).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await limiter.hit(key, 1, 1)).allowed).toBe(true);
  });

  it('peeks without counting', async () => {
    const key = `test:${randomBytes(6).toString('hex')}`;
    expect((await limiter.peek(key, 2, 60)).remaining).toBe(2);
    await limiter.hit(key, 2, 60);
    expect((await limiter.peek(key, 2, 60)).remaining).toBe(1);
    expect((await limiter.peek(key, 2, 60)).remaining).toBe(1);
  });
});

describe('rate limit headers', () => {
  it('uses the IETF RateLimit fields and Retry-After on 429', () => {
    const state = { allowed: false, limit: 600, remaining: 0, resetSeconds: 41, windowSeconds: 60 };
    expect(rateLimitHeaders(state)).toEqual({
      RateLimit: '"default";r=0;t=41',
      'RateLimit-Policy': '"default";q=600;w=60',
    });
    const error = rateLimitedError(state, 'requests');
    expect(error.status).toBe(429);
    expect(error.type).toBe('/problems/rate-limited');
    expect(error.headers['Retry-After']).toBe('41');
  });
});

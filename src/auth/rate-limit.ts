// Fixed-window request counters: per API key for the API, per client address (and per username +
// address for failed logins) for login and registration. In Redis when REDIS_URL is set, so every
// instance shares the counts; in memory otherwise (one instance).
import { Redis } from 'ioredis';
import { TooManyRequestsError } from '../domain/errors.ts';

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  windowSeconds: number;
}

export interface RateLimiter {
  /** Counts one request against `key` and tells whether it is within `limit` per window. */
  hit(key: string, limit: number, windowSeconds: number): Promise<RateLimitResult>;
  /** The current state without counting (e.g. "has this username failed too often?"). */
  peek(key: string, limit: number, windowSeconds: number): Promise<RateLimitResult>;
  close(): Promise<void>;
}

function result(count: number, limit: number, windowSeconds: number, resetMs: number): RateLimitResult {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    windowSeconds,
  };
}

export function createMemoryRateLimiter(): RateLimiter {
  const windows = new Map<string, { count: number; resetAt: number }>();
  let sweptAt = Date.now();

  function current(key: string, windowSeconds: number, now: number): { count: number; resetAt: number } {
    if (now - sweptAt > 60_000) {
      for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k);
      sweptAt = now;
    }
    let entry = windows.get(key);
    if (!entry || entry.resetAt <= now) {
      entry = { count: 0, resetAt: now + windowSeconds * 1000 };
      windows.set(key, entry);
    }
    return entry;
  }

  return {
    async hit(key, limit, windowSeconds) {
      const now = Date.now();
      const entry = current(key, windowSeconds, now);
      entry.count += 1;
      return result(entry.count, limit, windowSeconds, entry.resetAt - now);
    },
    async peek(key, limit, windowSeconds) {
      const now = Date.now();
      const entry = windows.get(key);
      if (!entry || entry.resetAt <= now) return result(0, limit, windowSeconds, windowSeconds * 1000);
      return result(entry.count, limit, windowSeconds, entry.resetAt - now);
    },
    async close() {
      windows.clear();
    },
  };
}

/** INCR and set the window's expiry atomically (a key never outlives its window, even after a crash). */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

export function createRedisRateLimiter(url: string): RateLimiter {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, keyPrefix: 'gats:ratelimit:' });
  return {
    async hit(key, limit, windowSeconds) {
      const [count, ttl] = (await redis.eval(HIT_SCRIPT, 1, key, String(windowSeconds * 1000))) as [
        number,
        number,
      ];
      return result(count, limit, windowSeconds, ttl);
    },
    async peek(key, limit, windowSeconds) {
      const [[, count], [, ttl]] = (await redis.multi().get(key).pttl(key).exec()) as [
        [null, string | null],
        [null, number],
      ];
      if (count === null || ttl < 0) return result(0, limit, windowSeconds, windowSeconds * 1000);
      return result(Number(count), limit, windowSeconds, ttl);
    },
    async close() {
      await redis.quit();
    },
  };
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), as the contract shows them. */
export function rateLimitHeaders(state: RateLimitResult): Record<string, string> {
  return {
    RateLimit: `"default";r=${state.remaining};t=${state.resetSeconds}`,
    'RateLimit-Policy': `"default";q=${state.limit};w=${state.windowSeconds}`,
  };
}

export function rateLimitedError(state: RateLimitResult, what: string): TooManyRequestsError {
  return new TooManyRequestsError(
    `Rate limit of ${state.limit} ${what} per ${state.windowSeconds} s exceeded; retry in ${state.resetSeconds} s.`,
    { ...rateLimitHeaders(state), 'Retry-After': String(state.resetSeconds) },
  );
}

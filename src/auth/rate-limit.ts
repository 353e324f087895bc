// Fixed-window request counters: per API key for the API, per client address (and per username +
// address for failed logins) for login and registration. In Redis when REDIS_URL is set, so every
// instance shares the counts; in memory otherwise (one instance). While Redis is away each instance
// counts in memory (approximate: N instances admit up to N times the limit), and the shared
// counters take over again when it returns.
import { TooManyRequestsError } from '../domain/errors.ts';
import type { RedisLink } from '../redis/link.ts';

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  windowSeconds: number;
}

export interface RateLimiter {
  /**
   * Counts one request against `key` and tells whether it is within `limit` per window: at once from
   * counters in memory (no promise on every request's path), through a promise from Redis.
   */
  hit(
    key: string,
    limit: number,
    windowSeconds: number,
    weight?: number,
  ): RateLimitResult | Promise<RateLimitResult>;
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
    hit(key, limit, windowSeconds, weight = 1) {
      const now = Date.now();
      const entry = current(key, windowSeconds, now);
      entry.count += weight;
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

/** INCRBY (a request's weight) and set the window's expiry atomically (a key never outlives its window, even after a crash). */
const HIT_SCRIPT = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

export function createRedisRateLimiter(link: RedisLink, onFallback?: () => void): RateLimiter {
  const redis = link.client('rate limits');
  const fallback = createMemoryRateLimiter();
  const key = (name: string) => `${link.prefix}ratelimit:${name}`;
  /** Redis when usable, else (or when the command fails) this instance's own counters. */
  async function either<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    if (link.usable()) {
      try {
        return await shared();
      } catch (error) {
        link.failed(error, 'rate limits');
      }
    }
    onFallback?.();
    return local();
  }
  return {
    hit: (name, limit, windowSeconds, weight = 1) =>
      either(
        async () => {
          const [count, ttl] = (await redis.eval(
            HIT_SCRIPT,
            1,
            key(name),
            String(windowSeconds * 1000),
            String(weight),
          )) as [number, number];
          return result(count, limit, windowSeconds, ttl);
        },
        async () => fallback.hit(name, limit, windowSeconds, weight),
      ),
    peek: (name, limit, windowSeconds) =>
      either(
        async () => {
          const [[, count], [, ttl]] = (await redis.multi().get(key(name)).pttl(key(name)).exec()) as [
            [null, string | null],
            [null, number],
          ];
          if (count === null || ttl < 0) return result(0, limit, windowSeconds, windowSeconds * 1000);
          return result(Number(count), limit, windowSeconds, ttl);
        },
        () => fallback.peek(name, limit, windowSeconds),
      ),
    async close() {
      redis.disconnect();
      await fallback.close();
    },
  };
}

/** A counted policy: its name in the headers (`default` is the API key's, or the address's on login). */
export type NamedRateLimit = [name: string, state: RateLimitResult];

/**
 * The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), as the contract shows
 * them: one list member per policy the request was counted against, the API key's (`default`) first.
 */
export function rateLimitHeaders(
  states: RateLimitResult | readonly NamedRateLimit[],
): Record<string, string> {
  const named: readonly NamedRateLimit[] = Array.isArray(states)
    ? states
    : [['default', states as RateLimitResult]];
  // Both lists in one pass: they are on every authenticated answer.
  let limit = '';
  let policy = '';
  for (const [name, state] of named) {
    if (limit !== '') {
      limit += ', ';
      policy += ', ';
    }
    limit += `"${name}";r=${state.remaining};t=${state.resetSeconds}`;
    policy += `"${name}";q=${state.limit};w=${state.windowSeconds}`;
  }
  return { RateLimit: limit, 'RateLimit-Policy': policy };
}

/** 429 for the exhausted policy (the last of `states` when a list is given), with every policy's headers. */
export function rateLimitedError(
  state: RateLimitResult,
  what: string,
  states?: readonly NamedRateLimit[],
): TooManyRequestsError {
  return new TooManyRequestsError(
    `Rate limit of ${state.limit} ${what} per ${state.windowSeconds} s exceeded; retry in ${state.resetSeconds} s.`,
    { ...rateLimitHeaders(states ?? state), 'Retry-After': String(state.resetSeconds) },
  );
}

// Throttling of password guessing, shared by POST /api/v1/auth/login and the OAuth login page:
// every attempt counts against the client address (LOGIN_RATE_LIMIT_REQUESTS per window), and
// failures also count against the username at that address, which locks that pair out sooner.
import { type RateLimiter, type RateLimitResult, rateLimitedError } from './rate-limit.ts';

/** Failed passwords allowed per username and address per FAILURE_WINDOW_SECONDS. */
const FAILURES_PER_USERNAME = 5;
const FAILURE_WINDOW_SECONDS = 15 * 60;

export interface LoginThrottle {
  /** Counts an attempt from `ip` (login or registration); throws 429 when over the limit. */
  attempt(kind: 'login' | 'register', ip: string): Promise<RateLimitResult>;
  /** Throws 429 when this username failed too often from this address. */
  assertNotLockedOut(username: string, ip: string): Promise<void>;
  recordFailure(username: string, ip: string): Promise<void>;
}

export function createLoginThrottle(
  limiter: RateLimiter,
  limits: { loginPerWindow: number; windowSeconds: number },
): LoginThrottle {
  const failureKey = (username: string, ip: string) => `login-failures:${username.toLowerCase()}:${ip}`;
  return {
    async attempt(kind, ip) {
      const state = await limiter.hit(`${kind}:ip:${ip}`, limits.loginPerWindow, limits.windowSeconds);
      if (!state.allowed) throw rateLimitedError(state, `${kind} attempts`);
      return state;
    },
    async assertNotLockedOut(username, ip) {
      const state = await limiter.peek(
        failureKey(username, ip),
        FAILURES_PER_USERNAME,
        FAILURE_WINDOW_SECONDS,
      );
      if (state.remaining === 0) throw rateLimitedError(state, 'failed logins for this username');
    },
    async recordFailure(username, ip) {
      await limiter.hit(failureKey(username, ip), FAILURES_PER_USERNAME, FAILURE_WINDOW_SECONDS);
    },
  };
}

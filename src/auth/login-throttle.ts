// Throttling of password guessing, shared by POST /api/v1/auth/login and the OAuth login page:
// - every attempt counts against the client address (LOGIN_RATE_LIMIT_REQUESTS per window);
// - failures count against the username at that address, which locks that pair out sooner;
// - failures also count against the username from every address (13.12: a locked-out username was
//   tried again at once from another address). Past a few, each further failure makes the username
//   wait twice as long before its next attempt, up to a cap: an attacker with many addresses gets a
//   handful of guesses per window, and cannot lock the owner out for longer than the cap.
import { type RateLimiter, type RateLimitResult, rateLimitedError } from './rate-limit.ts';

/** Failed passwords allowed per username and address per FAILURE_WINDOW_SECONDS. */
const FAILURES_PER_USERNAME = 5;
const FAILURE_WINDOW_SECONDS = 15 * 60;
/** Failures of one username, from all addresses together, before backoff starts. */
const FREE_FAILURES_ACROSS_ADDRESSES = 10;
/** The backoff after the first failure past the free ones, doubled for each further one. */
const FIRST_BACKOFF_SECONDS = 2;
const MAX_BACKOFF_SECONDS = 5 * 60;
/** A count that never limits: the failure counter is read, its limit applied here. */
const UNCAPPED = 1_000_000_000;

export interface LoginThrottle {
  /** Counts an attempt from `ip` (login or registration); throws 429 when over the limit. */
  attempt(kind: 'login' | 'register', ip: string): Promise<RateLimitResult>;
  /**
   * Throws 429 when this username failed too often from this address, or is waiting out its backoff
   * after failures from any address.
   */
  assertNotLockedOut(username: string, ip: string): Promise<void>;
  recordFailure(username: string, ip: string): Promise<void>;
}

/** Seconds a username waits after its `failures`-th failure within the window (0: no wait). */
export function backoffSeconds(failures: number): number {
  const past = failures - FREE_FAILURES_ACROSS_ADDRESSES;
  if (past <= 0) return 0;
  return Math.min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** Math.min(past - 1, 30));
}

export function createLoginThrottle(
  limiter: RateLimiter,
  limits: { loginPerWindow: number; windowSeconds: number },
): LoginThrottle {
  const failureKey = (username: string, ip: string) => `login-failures:${username.toLowerCase()}:${ip}`;
  const usernameFailures = (username: string) => `login-failures:${username.toLowerCase()}`;
  // One key per failure count, living as long as that count's backoff: no clock to share between
  // instances, only the counters the limiter already keeps (in Redis when configured).
  const backoffKey = (username: string, failures: number) =>
    `login-backoff:${username.toLowerCase()}:${failures}`;
  const failuresOf = (state: RateLimitResult) => state.limit - state.remaining;

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
      const failures = failuresOf(
        await limiter.peek(usernameFailures(username), UNCAPPED, FAILURE_WINDOW_SECONDS),
      );
      const wait = backoffSeconds(failures);
      if (wait === 0) return;
      const backoff = await limiter.peek(backoffKey(username, failures), 1, wait);
      if (backoff.remaining === 0) {
        throw rateLimitedError(
          { ...backoff, limit: FREE_FAILURES_ACROSS_ADDRESSES, windowSeconds: FAILURE_WINDOW_SECONDS },
          'failed logins for this username from all addresses (then a growing wait)',
        );
      }
    },
    async recordFailure(username, ip) {
      await limiter.hit(failureKey(username, ip), FAILURES_PER_USERNAME, FAILURE_WINDOW_SECONDS);
      const failures = failuresOf(
        await limiter.hit(usernameFailures(username), UNCAPPED, FAILURE_WINDOW_SECONDS),
      );
      const wait = backoffSeconds(failures);
      if (wait > 0) await limiter.hit(backoffKey(username, failures), 1, wait);
    },
  };
}

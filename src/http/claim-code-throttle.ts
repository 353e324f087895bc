// Guessing claim codes (issue 36), limited like password guessing (src/auth/login-throttle.ts): a
// redemption of a code that does not exist counts against the caller and against the client
// address; past either limit, every redemption by that caller or from that address is answered 429
// until its window ends (with a valid code too, so a guesser learns nothing more). The counters are
// the deployment's rate limiter's (in Redis with several instances).
import { type RateLimiter, rateLimitedError } from '../auth/rate-limit.ts';

/** Codes that do not exist, per user and per client address, per window. */
export const CLAIM_GUESSES_PER_USER = 10;
export const CLAIM_GUESSES_PER_ADDRESS = 30;
export const CLAIM_GUESS_WINDOW_SECONDS = 15 * 60;

export interface ClaimCodeThrottle {
  /** Throws 429 when the user or the address used up its guesses. */
  assertMayGuess(userId: string, ip: string): Promise<void>;
  /** Counts a code that does not exist. */
  recordMiss(userId: string, ip: string): Promise<void>;
}

export function createClaimCodeThrottle(limiter: RateLimiter): ClaimCodeThrottle {
  const keys = (userId: string, ip: string) =>
    [
      [`claim-misses:user:${userId}`, CLAIM_GUESSES_PER_USER],
      [`claim-misses:ip:${ip}`, CLAIM_GUESSES_PER_ADDRESS],
    ] as const;
  return {
    async assertMayGuess(userId, ip) {
      for (const [key, limit] of keys(userId, ip)) {
        const state = await limiter.peek(key, limit, CLAIM_GUESS_WINDOW_SECONDS);
        if (state.remaining === 0) throw rateLimitedError(state, 'claim codes that do not exist');
      }
    },
    async recordMiss(userId, ip) {
      for (const [key, limit] of keys(userId, ip)) await limiter.hit(key, limit, CLAIM_GUESS_WINDOW_SECONDS);
    },
  };
}

// The password check shared by POST /api/v1/auth/login and the OAuth login page: the attempt
// counts against the address, a locked-out username is refused before its password is read, and a
// wrong password counts against the username.
import type { EntityManager } from '@mikro-orm/sql';
import type { User } from '../db/entities/User.ts';
import { checkCredentials } from './accounts.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { RateLimitResult } from './rate-limit.ts';

export interface PasswordLogin {
  /** The user whose password matched; null when the username is unknown or the password wrong. */
  user: User | null;
  /** The address's login budget after this attempt (for RateLimit headers). */
  budget: RateLimitResult;
}

/** Throws 429 when the address or the username is over its limit. */
export async function checkPasswordLogin(
  em: EntityManager,
  throttle: LoginThrottle,
  login: { username: string; password: string; ip: string },
): Promise<PasswordLogin> {
  const budget = await throttle.attempt('login', login.ip);
  await throttle.assertNotLockedOut(login.username, login.ip);
  const user = await checkCredentials(em, login.username, login.password);
  if (!user) await throttle.recordFailure(login.username, login.ip);
  return { user, budget };
}

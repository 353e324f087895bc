// Users made as fixtures log in with a password hashed at a test's cost. Registration through the API
// hashes at the service's cost (scrypt N=2^15: ~130-250 ms of CPU); the stored hash is then swapped
// for one of the same password at N=2^10 (about 1 ms), which verifyPassword reads from the hash
// itself, so the user's logins (password grant, the sign-in page of the OAuth flows) do not pay the
// service's cost again. Hundreds of logins per run. Tests of how passwords are stored take users
// that were not swapped (`register` in test/integration/auth/auth-helpers.ts).
import { hashPassword } from '../../src/auth/passwords.ts';
import { User } from '../../src/db/entities/User.ts';
import type { Orm } from '../../src/db/orm.ts';

/** The password every fixture user has (test/integration/auth/auth-helpers.ts's PASSWORD). */
export const FIXTURE_PASSWORD = 'correct horse battery staple';

let cheapHash: Promise<string> | undefined;

/** Stores FIXTURE_PASSWORD hashed at a test's cost as `userId`'s password. */
export async function useCheapPassword(orm: Orm, userId: string): Promise<void> {
  cheapHash ??= hashPassword(FIXTURE_PASSWORD, { N: 2 ** 10, r: 8, p: 1 });
  await orm.em.fork().nativeUpdate(User, { id: userId }, { passwordHash: await cheapHash });
}

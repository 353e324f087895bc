// The tests' apps store passwords at a test's cost. Registration in the service hashes at the
// service's cost (scrypt N=2^15: ~130-250 ms of CPU per user; a run registers over a thousand); an
// app built by startTestApp (test/helpers/app.ts) is given `testPasswordHasher` instead (its
// BuildOptions.passwordHasher, which only code building an app in-process can set), the same scrypt
// at N=2^10 (about 1 ms). verifyPassword reads the cost from the stored hash, so these users' logins
// are cheap too. Tests of how passwords are stored start their app with `servicePasswords` (see
// test/security/secrets-at-rest.test.ts) or store one user's at the service's cost
// (`useServiceCostPassword`: the login timing comparison in test/integration/auth/api-access.test.ts).
import { hashPassword, type PasswordHasher } from '../../src/auth/passwords.ts';
import { User } from '../../src/db/entities/User.ts';
import type { Orm } from '../../src/db/orm.ts';

/** The password every fixture user has (test/integration/auth/auth-helpers.ts's PASSWORD). */
export const FIXTURE_PASSWORD = 'correct horse battery staple';

/** scrypt at N=2^10: the tests' apps' cost. */
export const testPasswordHasher: PasswordHasher = (password) =>
  hashPassword(password, { N: 2 ** 10, r: 8, p: 1 });

/** Stores `password` hashed at the service's cost as `userId`'s password. */
export async function useServiceCostPassword(orm: Orm, userId: string, password: string): Promise<void> {
  await orm.em.fork().nativeUpdate(User, { id: userId }, { passwordHash: await hashPassword(password) });
}

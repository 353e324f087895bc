// Users: registration, password checks, roles, and the User resource the API returns.

import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { User, type UserRole } from '../db/entities/User.ts';
import { Wallet } from '../db/entities/Wallet.ts';
import type { Orm } from '../db/orm.ts';
import { forUpdate, inTransaction } from '../db/transactions.ts';
import { auditDraft, recordAudit } from '../domain/audit.ts';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.ts';
import { revokeRoleCredentials } from '../domain/identity/credentials.ts';
import { newId } from '../domain/ids.ts';
import { formatAddress } from '../domain/ledger/addresses.ts';
import { type Page, pageById } from '../domain/ledger/cursor.ts';
import { revokeAccountGrants } from './adapter.ts';
import {
  dummyPasswordHash,
  hashPassword,
  type PasswordHasher,
  passwordPolicyViolation,
  verifyPassword,
} from './passwords.ts';
import { isServiceAccountId, SERVICE_ACCOUNT_PREFIX } from './service-account-ids.ts';

/**
 * Called inside the registration transaction with the new (flushed) user: the ledger creates the
 * custodial wallet there, so a user never exists without one.
 */
export type UserRegisteredHook = (em: EntityManager, user: User) => Promise<unknown>;

export interface UserView {
  id: string;
  username: string;
  role: UserRole;
  wallets: string[];
  createdAt: string;
}

export function normalizeUsername(username: string): string {
  return username.toLowerCase();
}

/** The user with its wallets: the custodial one first, then linked wallets oldest first. */
export async function userView(em: EntityManager, user: User): Promise<UserView> {
  return viewWith(user, await em.find(Wallet, { user: user.id }));
}

function viewWith(user: User, wallets: Wallet[]): UserView {
  const ordered = [...wallets].sort((a, b) => {
    if (a.kind !== b.kind) return a.kind === 'custodial' ? -1 : 1;
    return a.createdAt.getTime() - b.createdAt.getTime();
  });
  return {
    id: user.id,
    username: user.username,
    role: user.role,
    wallets: ordered.map((wallet) => formatAddress(wallet.address)),
    createdAt: user.createdAt.toISOString(),
  };
}

/**
 * People (not service accounts: their rows share the table under `svc_` ids), oldest first (ids are
 * time-ordered), optionally of one role or with a username starting with `username` (letters,
 * digits, dots and dashes: the contract keeps out `_`, which LIKE would read as a wildcard).
 */
export async function listUsers(
  em: EntityManager,
  query: { role?: UserRole; username?: string; limit: number; cursor?: string },
): Promise<Page<UserView>> {
  const filters: FilterQuery<User>[] = [{ id: { $like: 'usr%' } }];
  if (query.role) filters.push({ role: query.role });
  if (query.username)
    filters.push({ usernameNormalized: { $like: `${normalizeUsername(query.username)}%` } });
  const result = await pageById(em, User, filters, {
    list: 'users',
    order: 'oldest',
    limit: query.limit,
    cursor: query.cursor,
  });
  // One read of the page's wallets, not one per user.
  const wallets = result.data.length
    ? await em.find(Wallet, { user: { $in: result.data.map((user) => user.id) } })
    : [];
  return {
    data: result.data.map((user) =>
      viewWith(
        user,
        wallets.filter((wallet) => wallet.user?.id === user.id),
      ),
    ),
    next_cursor: result.next_cursor,
  };
}

export async function registerUser(
  orm: Orm,
  input: { username: string; password: string },
  onUserRegistered: UserRegisteredHook | undefined,
  /** How the password is hashed (the demo accounts' published passwords are hashed ahead). */
  hash: PasswordHasher = hashPassword,
): Promise<UserView> {
  if (normalizeUsername(input.username).startsWith(SERVICE_ACCOUNT_PREFIX)) {
    throw new ValidationError(
      `Usernames starting with ${SERVICE_ACCOUNT_PREFIX} are reserved for service accounts.`,
      [{ pointer: '/body/username', detail: `must not start with ${SERVICE_ACCOUNT_PREFIX}` }],
    );
  }
  const violation = passwordPolicyViolation(input.password, input.username);
  if (violation) {
    throw new ValidationError('The password does not meet the policy.', [
      { pointer: '/body/password', detail: violation },
    ]);
  }
  const usernameNormalized = normalizeUsername(input.username);
  const taken = () =>
    new ConflictError(`The username ${input.username} is already registered.`, '/problems/username-taken');
  if (await orm.em.fork().count(User, { usernameNormalized })) throw taken();
  const passwordHash = await hash(input.password);
  try {
    return await inTransaction(orm, async (em) => {
      const user = em.create(User, {
        id: newId('usr'),
        username: input.username,
        usernameNormalized,
        passwordHash,
        role: 'player',
        createdAt: new Date(),
      });
      await em.flush();
      await onUserRegistered?.(em, user);
      await em.flush();
      return userView(em, user);
    });
  } catch (error) {
    // Two registrations of one name racing: the unique index decides, the loser gets the same 409.
    if ((error as { name?: string }).name === 'UniqueConstraintViolationException') throw taken();
    throw error;
  }
}

/**
 * The user whose password matches, else null. Unknown users are checked against a dummy hash so
 * both failures take the same time and the answer never tells whether the user exists.
 */
export async function checkCredentials(
  em: EntityManager,
  username: string,
  password: string,
): Promise<User | null> {
  const user = await em.findOne(User, { usernameNormalized: normalizeUsername(username) });
  const matches = await verifyPassword(password, user?.passwordHash ?? dummyPasswordHash());
  return user && matches ? user : null;
}

export async function findUser(em: EntityManager, id: string): Promise<User | null> {
  return em.findOne(User, { id });
}

/**
 * Changes the user's role. A change revokes the user's grants (so refresh tokens stop working and
 * the next login carries the new role's scopes). The last admin (a person: service accounts do not
 * count) cannot be demoted.
 */
export async function setUserRole(orm: Orm, userId: string, role: UserRole): Promise<UserView> {
  return inTransaction(orm, async (em) => {
    const user = await em.findOne(User, { id: userId }, forUpdate(orm));
    if (!user) throw new NotFoundError(`No user with id ${userId}.`);
    if (user.role !== role) {
      if (user.role === 'admin' && !isServiceAccountId(user.id)) {
        // Lock every admin row so two concurrent demotions cannot both see "another admin exists".
        // 30.9: only people count. A service account is no admin reachable through the API without
        // an admin owner (its role is capped by its owner's), so it never stands in for one.
        const admins = await em.find(User, { role: 'admin' }, forUpdate(orm));
        if (admins.filter((admin) => !isServiceAccountId(admin.id)).length <= 1) {
          throw new ConflictError(
            `${user.id} is the only admin; give another user the admin role first.`,
            '/problems/last-admin',
          );
        }
      }
      const before = user.role;
      user.role = role;
      await em.flush();
      await revokeAccountGrants(em, user.id);
      await revokeRoleCredentials(em, user.id); // 13.3: role credentials do not outlive the role
      // Last: the audit tip's lock is the last one a transaction takes (src/domain/audit.ts).
      await recordAudit(
        em,
        auditDraft(
          'user.roleChanged',
          { type: 'user', id: user.id, ownerId: user.id },
          { before: { role: before }, after: { role } },
        ),
      );
    }
    return userView(em, user);
  });
}

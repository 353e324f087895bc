// Per-user caps on what a user may hold at once (13.5: keys and applications were unlimited, so one
// user could mint any number of API keys, each with its own rate limit and WebSocket share). The count
// and the insert run in one transaction holding the user's row (PostgreSQL; SQLite serializes
// writers), so concurrent creations cannot overshoot the cap.
import type { EntityManager } from '@mikro-orm/sql';
import { User } from '../db/entities/User.ts';
import { forUpdate } from '../db/transactions.ts';
import { ConflictError } from '../domain/errors.ts';

export { accountMembers } from '../db/account-members.ts';

export interface Quotas {
  /** Active (unrevoked) API keys per user. */
  apiKeysPerUser: number;
  /** Applications (OAuth clients, not deleted) per user. */
  applicationsPerUser: number;
}

export class QuotaExceededError extends ConflictError {
  constructor(what: string, limit: number, remedy: string) {
    super(
      `You already have ${limit} ${what}, the most one user may have; ${remedy}`,
      '/problems/quota-exceeded',
    );
  }
}

/** Takes the user's row lock for the rest of the transaction (no-op on SQLite, which has one writer). */
export async function lockUser(em: EntityManager, userId: string): Promise<void> {
  await em.findOne(User, { id: userId }, { ...forUpdate(em), fields: ['id'] });
}

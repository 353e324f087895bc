// Whose per-user limits a caller counts against (30.6): a user's own, and a service account's
// owner's. A player may own several service accounts; counted under their own ids, each would have
// brought a whole user's request rate, WebSocket connections and webhooks again. A service account's
// owner never changes, so the answer is kept (bounded) once read.
import { ServiceAccount } from '../db/entities/ServiceAccount.ts';
import type { Orm } from '../db/orm.ts';
import { isServiceAccountId } from './service-account-ids.ts';

const CACHE_LIMIT = 10_000;

export interface LimitOwners {
  /** The user whose limits `userId` counts against: synchronous for a user, or a service account already read. */
  of(userId: string): string | Promise<string>;
}

export function createLimitOwners(orm: Orm): LimitOwners {
  const owners = new Map<string, string>();
  async function lookUp(id: string): Promise<string> {
    const account = await orm.em.fork().findOne(ServiceAccount, { id }, { fields: ['owner'] });
    // Unknown (never a token's subject in practice): the account counts on its own.
    const owner = account?.owner.id ?? id;
    if (owners.size >= CACHE_LIMIT) owners.delete(owners.keys().next().value as string);
    owners.set(id, owner);
    return owner;
  }
  return {
    of(userId) {
      if (!isServiceAccountId(userId)) return userId;
      return owners.get(userId) ?? lookUp(userId);
    },
  };
}

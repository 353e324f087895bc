// The users whose holdings count against one user's caps (30.6): the user and the service accounts
// it owns (deleted ones too: what they still hold counts). Used by the quotas of the access-control
// code and by the ledger's caps on open trade proposals and its trade refusals.
import type { EntityManager } from '@mikro-orm/sql';
import { ServiceAccount } from './entities/ServiceAccount.ts';
import { User } from './entities/User.ts';

export async function accountMembers(em: EntityManager, ownerId: string): Promise<string[]> {
  const accounts = await em.find(ServiceAccount, { owner: ownerId }, { fields: ['id'] });
  return [ownerId, ...accounts.map((account) => account.id)];
}

/** The account a user id counts as: a service account's owner, else the user itself; null for no user. */
export async function accountOf(em: EntityManager, userId: string): Promise<string | null> {
  const account = await em.findOne(ServiceAccount, { id: userId }, { fields: ['owner'] });
  if (account) return account.owner.id;
  return (await em.count(User, { id: userId })) ? userId : null;
}

// The users whose holdings count against one user's caps (30.6): the user and the service accounts
// it owns (deleted ones too: what they still hold counts). Used by the quotas of the access-control
// code and by the ledger's caps on open trade proposals.
import type { EntityManager } from '@mikro-orm/sql';
import { ServiceAccount } from './entities/ServiceAccount.ts';

export async function accountMembers(em: EntityManager, ownerId: string): Promise<string[]> {
  const accounts = await em.find(ServiceAccount, { owner: ownerId }, { fields: ['id'] });
  return [ownerId, ...accounts.map((account) => account.id)];
}

// Admin reassignment of a registered contract to another collection, so to that collection's owner
// (finding 30.3): the remedy when a contract sits in the wrong studio's collection. The indexer
// reads the contract's collection on each step, so the transfers and assets projected from then on
// carry the new collection; ledger assets created before keep the collection they were created in
// (an on-chain token's asset can be neither minted, moved nor edited through the ledger, so its
// collection grants its owner nothing).
import { ref } from '@mikro-orm/core';
import { getAddress } from 'viem/utils';
import { ChainContract, Collection } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { flushAudited } from '../domain/audit.ts';
import { ForbiddenError, NotFoundError } from '../domain/errors.ts';
import type { Actor } from '../domain/ledger/actor.ts';
import { parseAddress } from '../domain/ledger/addresses.ts';
import { contractAudit } from './admin.ts';
import { contractView, type RegisteredContract } from './contracts.ts';

export interface ReassignContractInput {
  chainId: number;
  address: string;
  collectionId: string;
}

export async function reassignContract(
  orm: Orm,
  actor: Actor,
  input: ReassignContractInput,
): Promise<RegisteredContract> {
  if (actor.role !== 'admin') throw new ForbiddenError('Only an admin may reassign a registered contract.');
  const stored = parseAddress(input.address, '/path/address');
  const em = orm.em.fork();
  const contract = await em.findOne(ChainContract, { chainId: input.chainId, address: stored });
  if (!contract)
    throw new NotFoundError(`No contract ${getAddress(stored)} is registered on chain ${input.chainId}.`);
  const collection = await em.findOne(Collection, { id: input.collectionId });
  if (!collection) throw new NotFoundError(`No collection with id ${input.collectionId}.`);
  await em.populate(contract, ['collection']);
  const before = { collection: contract.collection.id };
  contract.collection = ref(collection);
  await flushAudited(em, () =>
    contractAudit('chainContract.reassigned', contract, { before, after: { collection: collection.id } }),
  );
  return contractView(contract);
}

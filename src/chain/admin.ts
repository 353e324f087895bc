// An admin's operations on a registered contract (security issue 30.1): suspend it (the indexer
// reads and projects it no more), resume it from where it stopped, or unregister it. Only admins
// (the contract's `x-roles` says so too); a contract unregistered is not found.
import { ChainContract } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { type AuditAction, auditDraft } from '../domain/audit.ts';
import { ForbiddenError, NotFoundError } from '../domain/errors.ts';
import type { Actor } from '../domain/ledger/actor.ts';
import { parseAddress } from '../domain/ledger/addresses.ts';
import { contractView, type RegisteredContract } from './contracts.ts';
import { resumeContract, suspendContract, unregisterContract } from './suspension.ts';

export interface ContractRef {
  chainId: number;
  /** Any case (a mixed-case one must be EIP-55). */
  address: string;
}

/** The registered (not unregistered) contract `ref` names, for an admin; 403 or 404 otherwise. */
async function adminContract(orm: Orm, actor: Actor, ref: ContractRef): Promise<ChainContract> {
  if (actor.role !== 'admin')
    throw new ForbiddenError('Only an admin may suspend, resume or unregister a contract.');
  const address = parseAddress(ref.address, '/params/address');
  const contract = await orm.em
    .fork()
    .findOne(
      ChainContract,
      { chainId: ref.chainId, address, status: { $ne: 'unregistered' } },
      { populate: ['collection'] },
    );
  if (!contract) throw new NotFoundError(`No contract ${ref.address} is registered on chain ${ref.chainId}.`);
  return contract;
}

/** An audit entry of `action` on the contract, its studio's (its collection's owner). */
export function contractAudit(
  action: AuditAction,
  contract: ChainContract,
  change: { before?: unknown; after?: unknown },
) {
  const collection = contract.collection.getEntity();
  return auditDraft(
    action,
    {
      type: 'chainContract',
      id: `${contract.chainId}:${contract.address}`,
      ownerId: collection.owner.id,
      collectionId: collection.id,
    },
    change,
  );
}

async function reread(orm: Orm, contract: ChainContract): Promise<RegisteredContract> {
  return contractView(await orm.em.fork().findOneOrFail(ChainContract, { id: contract.id }));
}

/** Suspends the contract (idempotent: a suspended one keeps its first reason). */
export async function adminSuspend(
  orm: Orm,
  actor: Actor,
  ref: ContractRef,
  reason: string,
): Promise<RegisteredContract> {
  const contract = await adminContract(orm, actor, ref);
  await suspendContract(
    orm,
    contract.id,
    `suspended by an admin (${actor.userId}): ${reason}`,
    contractAudit('chainContract.suspended', contract, {
      before: { status: 'active' },
      after: { status: 'suspended', reason },
    }),
  );
  return reread(orm, contract);
}

/** Resumes the contract from its checkpoint (idempotent: an active one is answered as it is). */
export async function adminResume(orm: Orm, actor: Actor, ref: ContractRef): Promise<RegisteredContract> {
  const contract = await adminContract(orm, actor, ref);
  await resumeContract(
    orm,
    contract.id,
    contractAudit('chainContract.resumed', contract, {
      before: { status: 'suspended' },
      after: { status: 'active' },
    }),
  );
  return reread(orm, contract);
}

/** Unregisters the contract (src/chain/suspension.ts says what is kept). */
export async function adminUnregister(orm: Orm, actor: Actor, ref: ContractRef): Promise<void> {
  const contract = await adminContract(orm, actor, ref);
  await unregisterContract(
    orm,
    contract.id,
    contractAudit('chainContract.unregistered', contract, {
      before: { status: contract.status },
      after: { status: 'unregistered' },
    }),
  );
}

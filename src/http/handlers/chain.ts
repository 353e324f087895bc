// On-chain contracts (src/chain/): register and list a collection's token contracts; an admin
// suspends, resumes or unregisters one (security issue 30.1), or moves it to another collection.

import type { ContractRef } from '../../chain/admin.ts';
import type { ChainModule } from '../../chain/index.ts';
import type { Actor } from '../../domain/ledger/actor.ts';
import { type HandlerMap, respond, type TypedRequest, typedHandlers } from '../handler.ts';
import { actorOf } from './ledger-request.ts';

type AdminOperation =
  | 'suspendChainContract'
  | 'resumeChainContract'
  | 'unregisterChainContract'
  | 'reassignChainContract';

/** The acting user and the contract a /api/v1/chains/{chain_id}/contracts/{address} request names. */
function target(request: TypedRequest<AdminOperation>): { actor: Actor; ref: ContractRef } {
  const auth = request.auth;
  if (!auth) throw new Error(`operation ${request.operationId} reached its handler unauthenticated`);
  return {
    actor: { userId: auth.userId, role: auth.role },
    // The router coerced the path against the contract; Number() keeps it a number whatever the path held.
    ref: { chainId: Number(request.params.chain_id), address: request.params.address },
  };
}

export function chainHandlers(chain: ChainModule): HandlerMap {
  return typedHandlers<'registerCollectionContract' | 'listCollectionContracts' | AdminOperation>({
    async registerCollectionContract(request, ctx) {
      const contract = await chain.register(actorOf(request), {
        collectionId: request.params.collection_id,
        ...request.body,
      });
      respond(ctx, 'registerCollectionContract', 201, contract);
    },
    async listCollectionContracts(request, ctx) {
      respond(ctx, 'listCollectionContracts', 200, { data: await chain.list(request.params.collection_id) });
    },
    async suspendChainContract(request, ctx) {
      const { actor, ref } = target(request);
      respond(ctx, 'suspendChainContract', 200, await chain.suspend(actor, ref, request.body.reason));
    },
    async resumeChainContract(request, ctx) {
      const { actor, ref } = target(request);
      respond(ctx, 'resumeChainContract', 200, await chain.resume(actor, ref));
    },
    async unregisterChainContract(request, ctx) {
      const { actor, ref } = target(request);
      await chain.unregister(actor, ref);
      ctx.status = 204;
    },
    async reassignChainContract(request, ctx) {
      const { actor, ref } = target(request);
      const contract = await chain.reassign(actor, { ...ref, collectionId: request.body.collectionId });
      respond(ctx, 'reassignChainContract', 200, contract);
    },
  });
}

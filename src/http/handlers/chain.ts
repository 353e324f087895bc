// On-chain contract registration (src/chain/): register and list a collection's token contracts;
// admins move one to another collection.
import type { ChainModule } from '../../chain/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf } from './ledger-request.ts';

export function chainHandlers(chain: ChainModule): HandlerMap {
  return typedHandlers<'registerCollectionContract' | 'listCollectionContracts' | 'reassignChainContract'>({
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
    async reassignChainContract(request, ctx) {
      const contract = await chain.reassign(actorOf(request), {
        chainId: Number(request.params.chain_id),
        address: request.params.address,
        collectionId: request.body.collectionId,
      });
      respond(ctx, 'reassignChainContract', 200, contract);
    },
  });
}

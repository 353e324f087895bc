// Store operations (issue 36): a collection's store offers (create, list, read, change) and buying
// one.
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function storeHandlers(ledger: Ledger): HandlerMap {
  const { stores } = ledger;
  return typedHandlers<
    'createStoreOffer' | 'listStoreOffers' | 'getStoreOffer' | 'updateStoreOffer' | 'purchaseStoreOffer'
  >({
    async createStoreOffer(request, ctx) {
      const { body } = request;
      const offer = await stores.create(actorOf(request), request.params.collection_id, {
        ...body,
        payTo: parseAddress(body.payTo, '/body/payTo'),
      });
      ctx.set('Location', `/api/v1/store-offers/${offer.id}`);
      respond(ctx, 'createStoreOffer', 201, offer);
    },

    async listStoreOffers(request, ctx) {
      const page = await stores.list(request.params.collection_id, {
        status: request.query.status,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listStoreOffers', 200, page);
    },

    async getStoreOffer(request, ctx) {
      const { wallet } = request.query;
      const offer = await stores.get(
        request.params.offer_id,
        wallet === undefined ? undefined : parseAddress(wallet, '/query/wallet'),
      );
      respond(ctx, 'getStoreOffer', 200, offer);
    },

    async updateStoreOffer(request, ctx) {
      const { body } = request;
      const offer = await stores.update(actorOf(request), request.params.offer_id, {
        ...body,
        payTo: body.payTo === undefined ? undefined : parseAddress(body.payTo, '/body/payTo'),
      });
      respond(ctx, 'updateStoreOffer', 200, offer);
    },

    async purchaseStoreOffer(request, ctx) {
      const { body } = request;
      const bought = await stores.purchase(
        actorOf(request),
        request.params.offer_id,
        {
          wallet: parseAddress(body.wallet, '/body/wallet'),
          version: body.version,
          quantity: body.quantity,
          items: body.items,
        },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'purchaseStoreOffer', bought);
    },
  });
}

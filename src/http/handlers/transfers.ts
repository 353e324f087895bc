// Transfer operations: moving assets, and the transfer history.
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function transferHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<'createTransfer' | 'listTransfers' | 'getTransfer'>({
    async createTransfer(request, ctx) {
      const { body } = request;
      const input = {
        assetId: body.assetId,
        from: parseAddress(body.from, '/body/from'),
        to: parseAddress(body.to, '/body/to'),
        amount: body.amount,
      };
      const created = await ledger.transfers.create(actorOf(request), input, idempotencyKeyOf(request));
      sendStored(ctx, 'createTransfer', created);
    },

    async listTransfers(request, ctx) {
      const { wallet, assetId } = request.query;
      const page = await ledger.transfers.list({
        wallet: wallet === undefined ? undefined : parseAddress(wallet, '/query/wallet'),
        assetId,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listTransfers', 200, page);
    },

    async getTransfer(request, ctx) {
      respond(ctx, 'getTransfer', 200, await ledger.transfers.get(request.params.transfer_id));
    },
  });
}

// Transfer operations: moving assets, and the transfer history.
import type { components } from '../../../generated/openapi/types.ts';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import type { HandlerMap } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

type Schemas = components['schemas'];

export function transferHandlers(ledger: Ledger): HandlerMap {
  return {
    async createTransfer(request, ctx) {
      const body = request.body as Schemas['TransferRequest'];
      const input = {
        assetId: body.assetId,
        from: parseAddress(body.from, '/body/from'),
        to: parseAddress(body.to, '/body/to'),
        amount: body.amount,
      };
      sendStored(ctx, await ledger.transfers.create(actorOf(request), input, idempotencyKeyOf(request)));
    },

    async listTransfers(request, ctx) {
      const wallet = request.query.wallet as string | undefined;
      ctx.body = await ledger.transfers.list({
        wallet: wallet === undefined ? undefined : parseAddress(wallet, '/query/wallet'),
        assetId: request.query.assetId as string | undefined,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
    },

    async getTransfer(request, ctx) {
      ctx.body = await ledger.transfers.get(request.params.transfer_id);
    },
  };
}

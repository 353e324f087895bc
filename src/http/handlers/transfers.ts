// Transfer operations: moving assets, and the transfer history.
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function transferHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<
    'createTransfer' | 'createTransferBatch' | 'burnAsset' | 'lendAsset' | 'listTransfers' | 'getTransfer'
  >({
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

    async createTransferBatch(request, ctx) {
      const legs = request.body.legs.map((leg, i) => ({
        assetId: leg.assetId,
        from: parseAddress(leg.from, `/body/legs/${i}/from`),
        to: parseAddress(leg.to, `/body/legs/${i}/to`),
        amount: leg.amount,
      }));
      const created = await ledger.transfers.batch(actorOf(request), legs, idempotencyKeyOf(request));
      sendStored(ctx, 'createTransferBatch', created);
    },

    async burnAsset(request, ctx) {
      const input = {
        assetId: request.params.asset_id,
        from: parseAddress(request.body.from, '/body/from'),
        amount: request.body.amount,
      };
      const burned = await ledger.transfers.burn(actorOf(request), input, idempotencyKeyOf(request));
      sendStored(ctx, 'burnAsset', burned);
    },

    // Issue 36: a loan (a rental between wallets), back to its lender at its end time.
    async lendAsset(request, ctx) {
      const { body } = request;
      const input = {
        from: parseAddress(body.from, '/body/from'),
        to: parseAddress(body.to, '/body/to'),
        expiresAt: body.expiresAt,
      };
      const lent = await ledger.expiries.lend(
        actorOf(request),
        request.params.asset_id,
        input,
        idempotencyKeyOf(request),
      );
      if (lent.replayed) ctx.set('Idempotent-Replayed', 'true');
      respond(ctx, 'lendAsset', 200, lent.body);
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

// Two-party trade operations (issue 21): propose, list and read (parties only), accept, cancel; and a
// user's refusals of every proposal from another (issue 30.10), kept per account (a service account's
// are its owner's).
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { caller, type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function tradeHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<
    | 'createTrade'
    | 'listTrades'
    | 'getTrade'
    | 'acceptTrade'
    | 'cancelTrade'
    | 'setTradeRefusal'
    | 'deleteTradeRefusal'
    | 'listTradeRefusals'
  >({
    async createTrade(request, ctx) {
      const { body } = request;
      const input = {
        ...body,
        fromWallet: parseAddress(body.fromWallet, '/body/fromWallet'),
        toWallet: parseAddress(body.toWallet, '/body/toWallet'),
      };
      const created = await ledger.trades.create(
        actorOf(request),
        input,
        idempotencyKeyOf(request),
        caller(request).account,
      );
      sendStored(ctx, 'createTrade', created);
    },

    async listTrades(request, ctx) {
      const page = await ledger.trades.list(actorOf(request), {
        status: request.query.status,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listTrades', 200, page);
    },

    async getTrade(request, ctx) {
      respond(ctx, 'getTrade', 200, await ledger.trades.get(actorOf(request), request.params.trade_id));
    },

    async acceptTrade(request, ctx) {
      const accepted = await ledger.trades.accept(
        actorOf(request),
        request.params.trade_id,
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'acceptTrade', accepted);
    },

    async cancelTrade(request, ctx) {
      respond(ctx, 'cancelTrade', 200, await ledger.trades.cancel(actorOf(request), request.params.trade_id));
    },

    async setTradeRefusal(request, ctx) {
      const refusal = await ledger.trades.refuse(
        actorOf(request),
        caller(request).account,
        request.params.user_id,
      );
      respond(ctx, 'setTradeRefusal', 200, refusal);
    },

    async deleteTradeRefusal(request, ctx) {
      await ledger.trades.unrefuse(caller(request).account, request.params.user_id);
      ctx.status = 204;
    },

    async listTradeRefusals(request, ctx) {
      const page = await ledger.trades.listRefusals(caller(request).account, {
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listTradeRefusals', 200, page);
    },
  });
}

// Price operations: posting observations, the current price, and OHLC history.
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, idempotencyKeyOf, sendStored } from './ledger-request.ts';

const DEFAULT_QUOTE = 'USD';

export function priceHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<'getPrice' | 'postPrice' | 'getPriceHistory'>({
    async getPrice(request, ctx) {
      const price = await ledger.prices.current(request.params.id, request.query.currency ?? DEFAULT_QUOTE);
      respond(ctx, 'getPrice', 200, price);
    },

    async postPrice(request, ctx) {
      const posted = await ledger.prices.post(
        actorOf(request),
        request.params.id,
        request.body,
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'postPrice', posted);
    },

    async getPriceHistory(request, ctx) {
      const { query } = request;
      const history = await ledger.prices.history(request.params.id, {
        currency: query.currency ?? DEFAULT_QUOTE,
        interval: query.interval,
        from: query.from,
        to: query.to,
      });
      respond(ctx, 'getPriceHistory', 200, history);
    },
  });
}

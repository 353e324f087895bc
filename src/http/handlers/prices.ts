// Price operations: posting observations, the current price, and OHLC history.
import type { components } from '../../../generated/openapi/types.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import type { PriceInterval } from '../../domain/ledger/prices.ts';
import type { HandlerMap } from '../handler.ts';
import { actorOf, idempotencyKeyOf, sendStored } from './ledger-request.ts';

type Schemas = components['schemas'];

const DEFAULT_QUOTE = 'USD';

export function priceHandlers(ledger: Ledger): HandlerMap {
  return {
    async getPrice(request, ctx) {
      ctx.body = await ledger.prices.current(
        request.params.id,
        (request.query.currency as string | undefined) ?? DEFAULT_QUOTE,
      );
    },

    async postPrice(request, ctx) {
      const body = request.body as Schemas['PostPriceRequest'];
      sendStored(
        ctx,
        await ledger.prices.post(actorOf(request), request.params.id, body, idempotencyKeyOf(request)),
      );
    },

    async getPriceHistory(request, ctx) {
      ctx.body = await ledger.prices.history(request.params.id, {
        currency: (request.query.currency as string | undefined) ?? DEFAULT_QUOTE,
        interval: request.query.interval as PriceInterval,
        from: request.query.from as string | undefined,
        to: request.query.to as string | undefined,
      });
    },
  };
}

// Claim code operations (issue 36): creating codes, reading one, redeeming one (guesses limited per
// user and per client address: ../claim-code-throttle.ts).
import type { RateLimiter } from '../../auth/rate-limit.ts';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { ClaimCodeInvalidError } from '../../domain/ledger/store-claim-codes.ts';
import { createClaimCodeThrottle } from '../claim-code-throttle.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, idempotencyKeyOf, sendStored } from './ledger-request.ts';

export function claimCodeHandlers(ledger: Ledger, limiter: RateLimiter): HandlerMap {
  const { stores } = ledger;
  const throttle = createClaimCodeThrottle(limiter);
  return typedHandlers<'createClaimCodes' | 'getClaimCode' | 'redeemClaimCode'>({
    async createClaimCodes(request, ctx) {
      const created = await stores.createClaimCodes(
        actorOf(request),
        request.params.collection_id,
        request.body,
      );
      respond(ctx, 'createClaimCodes', 201, created);
    },

    async getClaimCode(request, ctx) {
      respond(ctx, 'getClaimCode', 200, await stores.getClaimCode(actorOf(request), request.params.code_id));
    },

    async redeemClaimCode(request, ctx) {
      const actor = actorOf(request);
      await throttle.assertMayGuess(actor.userId, ctx.ip);
      try {
        const redeemed = await stores.redeem(
          actor,
          { wallet: parseAddress(request.body.wallet, '/body/wallet'), code: request.body.code },
          idempotencyKeyOf(request),
        );
        sendStored(ctx, 'redeemClaimCode', redeemed);
      } catch (error) {
        if (error instanceof ClaimCodeInvalidError) await throttle.recordMiss(actor.userId, ctx.ip);
        throw error;
      }
    },
  });
}

// A store purchase (issue 36), or a claim code's redemption: ONE ledger plan through the leg writer
// (the plan is described in ./stores.ts): the offer checked at the version the buyer named, the price
// paid to `payTo` and the paid items burned (legs), the grants minted to the buyer `quantity` times,
// the purchase row and its `storePurchase` event; the refusal of the plan's `offerAvailable` guard
// read back as the problem the buyer gets. What it pays and grants is ./store-purchase-parts.ts.

import type { components } from '../../../generated/openapi/types.ts';
import type { StoreOffer } from '../../db/entities/StoreOffer.ts';
import { assertCreatorMayGrant, controlsWallet } from '../authorization.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { MaxSupplyExceededError } from './mints.ts';
import { actingNow } from './recipes.ts';
import type { GuardFailure } from './store/plan.ts';
import {
  OfferLimitReachedError,
  OfferNotAvailableError,
  OfferVersionChangedError,
  offerNotFound,
  type StoreContext,
} from './store-context.ts';
import {
  addGrants,
  addPayments,
  type Buying,
  emptyParts,
  type PurchaseInput,
  purchaseRecord,
} from './store-purchase-parts.ts';
import { WalletNotControlledError } from './wallets.ts';
import { earlierAnswerOr } from './writes.ts';

export type StorePurchaseResultView = components['schemas']['StorePurchaseResult'];

/** A store purchase, or a claim code's redemption (`viaCode`: no price, the version as read). */
export type Settle = (
  actor: Actor,
  id: string,
  input: PurchaseInput,
  key: ReturnType<Idempotency['keyOf']>,
  viaCode: boolean,
) => Promise<WriteResult<StorePurchaseResultView>>;

/** Why an offer cannot be bought at `at` by its status and window (undefined: it can). */
function unavailability(offer: StoreOffer, at: Date): 'closed' | 'notStarted' | 'expired' | undefined {
  if (offer.status !== 'active') return 'closed';
  if (offer.startsAt && offer.startsAt.getTime() > at.getTime()) return 'notStarted';
  if (offer.endsAt && offer.endsAt.getTime() <= at.getTime()) return 'expired';
  return undefined;
}

function notAvailable(offer: StoreOffer, reason: 'closed' | 'notStarted' | 'expired') {
  return new OfferNotAvailableError(
    reason === 'closed'
      ? `The offer ${offer.id} was closed by its studio.`
      : reason === 'notStarted'
        ? `The offer ${offer.id} is on sale from ${offer.startsAt?.toISOString()}.`
        : `The offer ${offer.id} ended at ${offer.endsAt?.toISOString()}.`,
  );
}

export function createSettlement(ctx: StoreContext): Settle {
  const { reads, idempotency, writer, collectionOf, readOffer, boughtBy } = ctx;

  /** Why the plan's `offerAvailable` guard failed, as the problem the buyer gets. */
  async function offerRefusal(id: string, asked: PurchaseInput, failure: GuardFailure, viaCode = false) {
    if (failure.guard.kind !== 'offerAvailable') return undefined;
    if (failure.reason === 'missing') return offerNotFound(id);
    const offer = await readOffer(id);
    const quantity = asked.quantity ?? 1;
    switch (failure.reason) {
      case 'version':
        // A code changed meanwhile (its studio disabled it): its redeemer named no version.
        if (viaCode) return notAvailable(offer, offer.status === 'active' ? 'expired' : 'closed');
        return new OfferVersionChangedError(id, asked.version, offer.version);
      case 'soldOut':
        return new OfferLimitReachedError(
          offer.sold >= (offer.limitTotal ?? 0)
            ? `The offer ${id} is sold out: ${offer.sold} of ${offer.limitTotal} units sold.`
            : `The offer ${id} has ${(offer.limitTotal ?? 0) - offer.sold} units left, fewer than ${quantity}.`,
        );
      case 'walletLimit': {
        const bought = await boughtBy(id, asked.wallet);
        return new OfferLimitReachedError(
          `The wallet ${formatAddress(asked.wallet)} bought ${bought} of the ${offer.limitPerWallet} units of the offer ${id} one wallet may buy; ${quantity} more would pass it.`,
        );
      }
      case 'closed':
      case 'notStarted':
      case 'expired':
        return notAvailable(offer, failure.reason);
      default:
        return new Error(`Unexpected offerAvailable reason ${failure.reason}.`);
    }
  }

  /**
   * The offer, checked early for what the plan's guard checks again inside its transaction: reached
   * as it is (a claim code by its code only), the buyer's wallet controlled, the version, the status
   * and window, the offer's creator still allowed to grant.
   */
  async function checkedOffer(actor: Actor, id: string, input: PurchaseInput, viaCode: boolean, at: Date) {
    const offer = await readOffer(id);
    // A claim code is reached by its code only.
    if (offer.codeHash && !viaCode) throw offerNotFound(id);
    await writer.assertControls(actor, [
      { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
    ]);
    // Early answers for what the plan's guard checks again inside its transaction.
    if (offer.version !== input.version) throw new OfferVersionChangedError(id, input.version, offer.version);
    const unavailable = unavailability(offer, at);
    if (unavailable) throw notAvailable(offer, unavailable);
    const collection = await collectionOf(offer.collectionId);
    assertCreatorMayGrant(await actingNow(reads, offer.createdBy), collection, 'offer');
    return offer;
  }

  return async function settle(actor, id, input, key, viaCode) {
    const quantity = input.quantity ?? 1;
    const at = new Date();
    const operationId = newId('op');
    const parts = emptyParts(controlsWallet(actor.userId, input.wallet));
    let offer: StoreOffer;
    let buying: Buying;
    try {
      offer = await checkedOffer(actor, id, input, viaCode, at);
      buying = { actor, offer, input, quantity, at };
      await addPayments(ctx, parts, buying);
      await addGrants(ctx, parts, buying);
    } catch (error) {
      return earlierAnswerOr(idempotency, key, error);
    }
    const { purchase, view, supplies } = purchaseRecord(parts, buying, operationId);
    const { legs, guards, assets, balances, transfers, lots, events, minted, nfts, caps } = parts;
    // The guard's refusal is read after the plan (the offer as it is then): `refuse` is synchronous.
    let refusedByOffer: GuardFailure | undefined;
    try {
      return await writer.apply(
        actor,
        legs,
        key,
        at,
        (payments) => ({
          status: 201,
          body: { id: operationId, purchase: view, transfers: [...payments, ...minted], nfts },
          headers: {},
        }),
        {
          leading: [
            {
              kind: 'offerAvailable',
              offerId: id,
              version: offer.version,
              wallet: input.wallet,
              quantity,
              at,
            },
          ],
          guards,
          assets,
          balances,
          supplies,
          transfers,
          lots,
          events,
          operationId,
          stores: {
            offerSales: [{ offerId: id, wallet: input.wallet, quantity }],
            storePurchases: [purchase],
          },
          refuse: (failure) => {
            if (failure.guard.kind !== 'offerAvailable') return undefined;
            refusedByOffer = failure;
            return new Error('offer refused');
          },
          rejected: (failure) => {
            const { guard, found = 0n } = failure;
            if (guard.kind === 'controls') return new WalletNotControlledError(guard.wallet);
            if (guard.kind !== 'supplyWithin') return new Error(`Unexpected guard ${guard.kind}.`);
            const cap = caps.get(guard.assetId);
            if (!cap) return new Error(`Unexpected supply guard ${guard.assetId}.`);
            return new MaxSupplyExceededError(
              `Grant ${cap.grant}: the purchase mints ${formatAmount(cap.delta, cap.decimals)} ${guard.assetId}, which would bring the supply to ${formatAmount(found + cap.delta, cap.decimals)}, past its max supply ${formatAmount(cap.max, cap.decimals)}.`,
            );
          },
        },
      );
    } catch (error) {
      if (refusedByOffer) throw (await offerRefusal(id, input, refusedByOffer, viaCode)) ?? error;
      throw error;
    }
  };
}

// A store purchase (issue 36), or a claim code's redemption: ONE ledger plan through the leg writer
// (the plan is described in ./stores.ts): the offer checked at the version the buyer named, the price
// paid to `payTo` and the paid items burned (legs), the grants minted to the buyer `quantity` times,
// the purchase row and its `storePurchase` event; the refusal of the plan's `offerAvailable` guard
// read back as the problem the buyer gets.

import type { components } from '../../../generated/openapi/types.ts';
import type { StoreOffer } from '../../db/entities/StoreOffer.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { assertCreatorMayGrant, controlsWallet } from '../authorization.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import { amountOf } from './asset-rows.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { Leg } from './legs.ts';
import { currencyMintParts, MaxSupplyExceededError, nftMintParts, timedLot } from './mints.ts';
import { actingNow } from './recipes.ts';
import type {
  BalanceChange,
  Guard,
  GuardFailure,
  NewAsset,
  NewEvent,
  NewLot,
  NewStorePurchase,
  NewTransfer,
} from './store/plan.ts';
import {
  OfferLimitReachedError,
  OfferNotAvailableError,
  OfferVersionChangedError,
  offerNotFound,
  type StoreContext,
} from './store-context.ts';
import { type ItemPrice, itemLegs } from './store-items.ts';
import type { AssetView, TransferView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { earlierAnswerOr } from './writes.ts';

type Schemas = components['schemas'];
type StorePurchaseView = Schemas['StorePurchase'];
export type StorePurchaseResultView = Schemas['StorePurchaseResult'];

export interface PurchaseInput {
  wallet: StoredAddress;
  version: number;
  quantity?: number;
  /** The NFTs paying the offer's item prices, as the buyer named them. */
  items?: string[];
}

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

const MAX_SUPPLY = 'select max_supply from asset where id = ?';

/** A granted currency's supply cap: the units the purchase mints, its max supply, its first grant. */
type SupplyCap = { delta: bigint; max: bigint; decimals: number; grant: number };

/** The rows and answer parts a purchase gathers, in the order it gathers them. */
interface PurchaseParts {
  legs: Leg[];
  guards: Guard[];
  assets: NewAsset[];
  balances: BalanceChange[];
  transfers: NewTransfer[];
  lots: NewLot[];
  events: NewEvent[];
  minted: TransferView[];
  nfts: AssetView[];
  paid: { assetId: string; amount: string }[];
  granted: { assetId: string; amount: string }[];
  caps: Map<string, SupplyCap>;
}

export function createSettlement(ctx: StoreContext): Settle {
  const { orm, idempotency, writer, reads, collectionOf, readOffer, boughtBy } = ctx;

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
    assertCreatorMayGrant(await actingNow(orm, offer.createdBy), collection, 'offer');
    return offer;
  }

  /** The price: currencies paid to `payTo` (legs), then the items by template burned from the buyer. */
  async function addPayments(
    parts: PurchaseParts,
    offer: StoreOffer,
    input: PurchaseInput,
    quantity: number,
    at: Date,
  ) {
    const { legs, paid } = parts;
    const payTo = offer.payTo as StoredAddress;
    const itemPrices: ItemPrice[] = [];
    for (const [i, item] of offer.price.entries()) {
      if ('nft' in item) {
        itemPrices.push({ index: i, ...item.nft });
        continue;
      }
      const currency = await writer.factsOf(item.assetId);
      const amount =
        parseAmount(item.amount, currency.decimals, { pointer: '/body', positive: true }) * BigInt(quantity);
      paid.push({ assetId: currency.id, amount: formatAmount(amount, currency.decimals) });
      // The studio buying in its own store pays itself: nothing moves.
      if (payTo !== input.wallet)
        legs.push({
          asset: currency,
          amount,
          from: input.wallet,
          to: payTo,
          place: { pointer: '/body/wallet', label: `Price ${i}: ` },
        });
    }
    // Items by template: burned from the buyer, named in `paid` one by one after the currencies.
    const burns = await itemLegs(reads, writer, {
      collectionId: offer.collectionId,
      prices: itemPrices,
      quantity,
      wallet: input.wallet,
      items: input.items ?? [],
      at,
    });
    legs.push(...burns);
    for (const burn of burns) paid.push({ assetId: burn.asset.id, amount: '1' });
  }

  /** The grants minted to the buyer, unit by unit; each granted currency's supply cap. */
  async function addGrants(
    parts: PurchaseParts,
    actor: Actor,
    offer: StoreOffer,
    input: PurchaseInput,
    quantity: number,
    at: Date,
  ) {
    const { assets, balances, transfers, lots, events, minted, nfts, granted, caps } = parts;
    for (let unit = 0; unit < quantity; unit++) {
      for (const [i, item] of offer.grants.entries()) {
        if ('nft' in item) {
          // Issue 36: a timed grant (a rental) ends `expiresInSeconds` after the purchase.
          const { expiresInSeconds, ...template } = item.nft;
          const nft = nftMintParts(
            expiresInSeconds === undefined
              ? template
              : { ...template, expiresAt: new Date(at.getTime() + expiresInSeconds * 1000) },
            offer.collectionId,
            offer.createdBy,
            input.wallet,
            at,
          );
          assets.push(nft.asset);
          balances.push(nft.balance);
          events.push(nft.event);
          nfts.push(nft.view);
          granted.push({ assetId: nft.asset.id, amount: '1' });
          continue;
        }
        const currency = await writer.factsOf(item.assetId);
        const amount = parseAmount(item.amount, currency.decimals, { pointer: '/body', positive: true });
        const mint = currencyMintParts(
          { id: currency.id, collectionId: offer.collectionId, decimals: currency.decimals },
          input.wallet,
          amount,
          actor.userId,
          at,
        );
        balances.push(mint.balance);
        transfers.push(mint.transfer);
        // Issue 36: a timed currency grant is a lot ending `expiresInSeconds` after the purchase.
        if (item.expiresInSeconds !== undefined)
          lots.push(timedLot(mint.transfer, new Date(at.getTime() + item.expiresInSeconds * 1000)));
        events.push(mint.event);
        minted.push(mint.view);
        const cap = caps.get(currency.id);
        if (cap) cap.delta += amount;
        else {
          const [row] = await reads.all(MAX_SUPPLY, [currency.id]);
          caps.set(currency.id, {
            delta: amount,
            max: row?.max_supply == null ? UINT256_MAX : amountOf(row.max_supply),
            decimals: currency.decimals,
            grant: i,
          });
        }
      }
    }
  }

  /**
   * The purchase row, its view and `storePurchase` event (pushed last), and the supply guards and
   * changes of the granted currencies.
   */
  function purchaseRecord(
    parts: PurchaseParts,
    actor: Actor,
    offer: StoreOffer,
    input: PurchaseInput,
    quantity: number,
    at: Date,
    operationId: string,
  ) {
    const { guards, events, paid, granted, caps } = parts;
    // Currency grants as one line each (the units summed), NFTs one line each.
    const currencyTotals = new Map<string, string>();
    for (const [assetId, { delta, decimals }] of caps)
      currencyTotals.set(assetId, formatAmount(delta, decimals));
    const grantedLines = [
      ...[...currencyTotals].map(([assetId, amount]) => ({ assetId, amount })),
      ...granted,
    ];
    const supplies: { assetId: string; delta: bigint }[] = [];
    for (const [assetId, { delta, max }] of caps) {
      guards.push({ kind: 'supplyWithin', assetId, adding: delta, max });
      supplies.push({ assetId, delta });
    }
    const purchase: NewStorePurchase = {
      id: operationId,
      offerId: offer.id,
      version: offer.version,
      collectionId: offer.collectionId,
      wallet: input.wallet,
      userId: actor.userId,
      quantity,
      paid,
      payTo: offer.payTo as StoredAddress,
      granted: grantedLines,
      createdAt: at,
    };
    const view: StorePurchaseView = {
      id: operationId,
      offerId: offer.id,
      version: offer.version,
      collection: offer.collectionId,
      wallet: formatAddress(input.wallet),
      quantity,
      paid,
      payTo: formatAddress(offer.payTo),
      granted: grantedLines,
      createdAt: at.toISOString(),
    };
    events.push({
      type: 'storePurchase',
      occurredAt: at,
      data: view,
      assetId: grantedLines[0].assetId,
      collectionId: offer.collectionId,
      wallets: offer.payTo === ZERO_ADDRESS ? [input.wallet] : [input.wallet, offer.payTo],
      fromWallet: input.wallet,
      toWallet: offer.payTo === ZERO_ADDRESS ? null : offer.payTo,
    });
    return { purchase, view, supplies };
  }

  return async function settle(actor, id, input, key, viaCode) {
    const quantity = input.quantity ?? 1;
    const at = new Date();
    const operationId = newId('op');
    const parts: PurchaseParts = {
      legs: [],
      guards: [controlsWallet(actor.userId, input.wallet)],
      assets: [],
      balances: [],
      transfers: [],
      lots: [],
      events: [],
      minted: [],
      nfts: [],
      paid: [],
      granted: [],
      caps: new Map(),
    };
    let offer: StoreOffer;
    try {
      offer = await checkedOffer(actor, id, input, viaCode, at);
      await addPayments(parts, offer, input, quantity, at);
      await addGrants(parts, actor, offer, input, quantity, at);
    } catch (error) {
      return earlierAnswerOr(idempotency, key, error);
    }
    const { purchase, view, supplies } = purchaseRecord(
      parts,
      actor,
      offer,
      input,
      quantity,
      at,
      operationId,
    );
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

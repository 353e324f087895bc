// What a store purchase (./store-purchase.ts) pays and grants, as the rows of its plan: the price's
// payment legs to `payTo` and the paid items' burns, the grants minted to the buyer unit by unit with
// each granted currency's supply cap, and the purchase row, its view and `storePurchase` event.

import type { components } from '../../../generated/openapi/types.ts';
import type { StoreOffer } from '../../db/entities/StoreOffer.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import { type AssetRow, amountOf } from './asset-rows.ts';
import type { Leg } from './legs.ts';
import { currencyMintParts, nftMintParts, timedLot } from './mints.ts';
import type {
  BalanceChange,
  Guard,
  NewAsset,
  NewEvent,
  NewLot,
  NewStorePurchase,
  NewTransfer,
} from './store/plan.ts';
import type { StoreContext } from './store-context.ts';
import { type ItemPrice, itemLegs } from './store-items.ts';
import type { AssetView, TransferView } from './views.ts';

type StorePurchaseView = components['schemas']['StorePurchase'];

export interface PurchaseInput {
  wallet: StoredAddress;
  version: number;
  quantity?: number;
  /** The NFTs paying the offer's item prices, as the buyer named them. */
  items?: string[];
}

/** A purchase as checked: who buys, the offer as read, what was asked, how many units, when. */
export interface Buying {
  actor: Actor;
  offer: StoreOffer;
  input: PurchaseInput;
  quantity: number;
  at: Date;
}

/** What the parts read with: the leg writer's facts, the prepared reads. */
type PartsContext = Pick<StoreContext, 'writer' | 'reads'>;

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

/** The parts of a purchase by `wallet`, empty but for the guard on its control of the wallet. */
export function emptyParts(controls: Guard): PurchaseParts {
  return {
    legs: [],
    guards: [controls],
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
}

/** The price: currencies paid to `payTo` (legs), then the items by template burned from the buyer. */
export async function addPayments(
  { writer, reads }: PartsContext,
  parts: PurchaseParts,
  { offer, input, quantity, at }: Buying,
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
export async function addGrants(
  { writer, reads }: PartsContext,
  parts: PurchaseParts,
  { actor, offer, input, quantity, at }: Buying,
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
        const [row] = await reads.all<Pick<AssetRow, 'max_supply'>>(MAX_SUPPLY, [currency.id]);
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
export function purchaseRecord(
  parts: PurchaseParts,
  { actor, offer, input, quantity, at }: Buying,
  operationId: string,
) {
  const { guards, events, paid, granted, caps } = parts;
  // Currency grants as one line each (the units summed), NFTs one line each.
  const currencyTotals = new Map<string, string>();
  for (const [assetId, { delta, decimals }] of caps)
    currencyTotals.set(assetId, formatAmount(delta, decimals));
  const grantedLines = [...[...currencyTotals].map(([assetId, amount]) => ({ assetId, amount })), ...granted];
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

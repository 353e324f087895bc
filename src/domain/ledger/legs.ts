// Legs: one move of an amount of an asset between two wallets (or to the zero address: a burn), as
// transfers, batches, burns, crafts, trades, purchases and the market write them; the rules checked
// before a plan (endpoints, amounts), the guards a plan carries for them, and the problems a refused
// guard is answered with. ./leg-writer.ts turns checked legs into plans; ./transfers.ts is the service.

import type { BurnPolicy } from '../../db/entities/Collection.ts';
import { controlsWallet } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import type {
  AssetUpdate,
  AuctionStatusChange,
  BalanceChange,
  Guard,
  GuardFailure,
  ListingStatusChange,
  NewAsset,
  NewEvent,
  NewLot,
  NewPrice,
  NewSale,
  NewTrade,
  NewTransfer,
  OfferStatusChange,
  ReservedChange,
  StoreParts,
  TradeStatusChange,
} from './store/plan.ts';
import { WalletNotControlledError } from './wallets.ts';

export interface TransferInput {
  assetId: string;
  from: StoredAddress;
  to: StoredAddress;
  amount: string;
}

export class AssetFrozenError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/asset-frozen');
  }
}

export class AssetSoulboundError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/asset-soulbound');
  }
}

// ---- Items that expire (issue 36) ----
/** 409 item-expired: the NFT's end time passed (swept or not), or an end time forbids the operation. */
export class ItemExpiredError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/item-expired');
  }
}

/** 409 item-lent: the NFT is lent; it moves only back to its lender, at its end time. */
export class ItemLentError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/item-lent');
  }
}

export class BurnNotAllowedError extends ConflictError {
  constructor(assetId: string, collectionId: string, place: LegPlace = SINGLE) {
    super(
      named(
        place,
        `The collection ${collectionId} allows no burn of its assets (burnPolicy none): ${assetId} cannot be burned.`,
      ),
      '/problems/burn-not-allowed',
    );
  }
}

export class InsufficientBalanceError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/insufficient-balance');
  }
}

/** Where a leg's fields are in the request, and how its problems name it. */
export interface LegPlace {
  /** `/body` for a single transfer, `/body/legs/{i}` for a batch's leg. */
  pointer: string;
  /** '' for a single transfer, `Leg {i}: ` for a batch's leg (`Input {i}: ` for a craft's input). */
  label: string;
}

export const SINGLE: LegPlace = { pointer: '/body', label: '' };

export function legPlace(index: number): LegPlace {
  return { pointer: `/body/legs/${index}`, label: `Leg ${index}: ` };
}

/** Prefixes a problem's detail with the leg's label (`Leg 2: No asset with id silver.`). */
export function named(place: LegPlace, detail: string): string {
  return place.label ? `${place.label}${detail.charAt(0).toLowerCase()}${detail.slice(1)}` : detail;
}

/** Rules that need no database: distinct wallets, no burning to the zero address. */
export function checkEndpoints(input: TransferInput, place: LegPlace = SINGLE): void {
  if (input.to === ZERO_ADDRESS) {
    throw new ValidationError(named(place, 'Assets cannot be sent to the zero address.'), [
      { pointer: `${place.pointer}/to`, detail: 'must not be the zero address' },
    ]);
  }
  if (input.from === input.to) {
    throw new ValidationError(named(place, '`from` and `to` are the same wallet.'), [
      { pointer: `${place.pointer}/to`, detail: 'must differ from `from`' },
    ]);
  }
}

/**
 * What a transfer needs of its asset; none of it ever changes once the asset exists (a collection's
 * owner and burn policy are set at its creation). Frozen and soulbound can change: the store checks
 * them (`movable`, `burnable` guards).
 */
export interface AssetFacts {
  id: string;
  kind: 'nft' | 'fungible';
  decimals: number;
  collectionId: string;
  collectionOwner: string;
  burnPolicy: BurnPolicy;
}

export function amountOf(
  asset: AssetFacts,
  text: string,
  place: LegPlace = SINGLE,
  what = 'transfer',
): bigint {
  const pointer = `${place.pointer}/amount`;
  try {
    const amount = parseAmount(text, asset.kind === 'nft' ? 0 : asset.decimals, { pointer, positive: true });
    if (asset.kind === 'nft' && amount !== 1n)
      throw new InvalidAmountError(
        `The amount of an NFT ${what} must be 1.`,
        pointer,
        'must be 1 for an NFT',
      );
    return amount;
  } catch (error) {
    if (error instanceof InvalidAmountError && place.label)
      throw new InvalidAmountError(
        named(place, error.detail ?? ''),
        pointer,
        error.errors?.[0]?.detail ?? '',
      );
    throw error;
  }
}

/** One checked leg: its asset, amount and wallets. `to` is the zero address for a burn. */
export interface Leg {
  asset: AssetFacts;
  amount: bigint;
  from: StoredAddress;
  to: StoredAddress;
  place: LegPlace;
  /** The user who must control `from`: the acting user unless given (a trade's proposer). */
  by?: string;
  /** A burn by the collection's studio (or an admin) under `holder_or_studio`: `from` need not be theirs. */
  byStudio?: boolean;
  /**
   * Issue 35: paid from `from`'s reserved part (an accepted offer's price, reserved when it was
   * made): no `controls` guard, a `reservedAtLeast` guard instead of `holds`, and the reservation
   * released by the amount as it is debited.
   */
  fromReserved?: boolean;
}

/**
 * What a plan holds besides its legs (a craft's mints): applied in the same transaction, after the
 * legs' parts; `rejected` answers a failed guard of `guards` (the legs answer their own).
 */
export interface ExtraParts {
  /** Guards checked before the legs' own (a trade still open). */
  leading?: Guard[];
  guards?: Guard[];
  trades?: NewTrade[];
  tradeStatuses?: TradeStatusChange[];
  assets?: NewAsset[];
  balances?: BalanceChange[];
  supplies?: { assetId: string; delta: bigint }[];
  transfers?: NewTransfer[];
  events?: NewEvent[];
  /** The operation every event of the plan belongs to (a batch, a craft, a trade's settlement). */
  operationId?: string;
  /** A marketplace purchase (./market-purchase.ts): the listing sold (kept out of the ending below), its sale. */
  listingStatuses?: ListingStatusChange[];
  sales?: NewSale[];
  prices?: NewPrice[];
  /** Issue 35: offers closed (an accepted offer), reserved parts changed besides the legs'. */
  offerStatuses?: OfferStatusChange[];
  reserves?: ReservedChange[];
  /** Issue 35: an auction settled. */
  auctionStatuses?: AuctionStatusChange[];
  /** Answers a failed guard before the legs' own answers do (a purchase's seller side). */
  refuse?: (failure: GuardFailure) => Error | undefined;
  rejected?: (failure: GuardFailure) => Error;
  /** A store purchase (issue 36, ./store-purchase.ts): the offer's units sold and the purchase row. */
  stores?: StoreParts;
  /** Issue 36, items that expire (./expiries.ts): a loan's end time and lender, set or cleared. */
  assetUpdates?: AssetUpdate[];
  /** Issue 36, timed currency grants: the lots a store grant makes. */
  lots?: NewLot[];
}

/** 409 insufficient-balance for `leg`: its `from` held `held`, less than `amount`, naming the leg. */
export function insufficientBalance(leg: Leg, held: bigint, amount: bigint) {
  const { asset } = leg;
  return new InsufficientBalanceError(
    named(
      leg.place,
      asset.kind === 'nft'
        ? `${formatAddress(leg.from)} does not own ${asset.id}.`
        : `${formatAddress(leg.from)} holds ${formatAmount(held, asset.decimals)} ${asset.id}, less than ${formatAmount(amount, asset.decimals)}.`,
    ),
  );
}

/** 403 wallet-not-controlled for a leg's `from`, naming the leg. */
export function notControlled(wallet: StoredAddress, place: LegPlace) {
  const error = new WalletNotControlledError(wallet);
  return place.label ? new WalletNotControlledError(wallet, named(place, error.detail ?? '')) : error;
}
/**
 * The guards every leg needs, as the holdings are before the plan: its user (`by`, else the actor)
 * controls its `from` (not for a studio's burn), its asset may move (`movable`; a burn: `burnable`,
 * a soulbound item may burn), and each (asset, `from`) holds the sum its legs take. Frozen and
 * soulbound (issue 21) are checked in the store's transaction: a freeze commits before the plan reads
 * the asset (refused) or after the plan commits.
 */
export function legGuards(actor: Actor, legs: Leg[]): Guard[] {
  const guards: Guard[] = [];
  const controlled = new Set<StoredAddress>();
  const debits = new Map<string, { leg: Leg; total: bigint }>();
  const reserved = new Map<string, { leg: Leg; total: bigint }>();
  for (const leg of legs) {
    if (leg.fromReserved) {
      const key = `${leg.asset.id}\u0000${leg.from}`;
      const debit = reserved.get(key);
      if (debit) debit.total += leg.amount;
      else reserved.set(key, { leg, total: leg.amount });
      continue;
    }
    if (!leg.byStudio && !controlled.has(leg.from)) {
      controlled.add(leg.from);
      guards.push(controlsWallet(leg.by ?? actor.userId, leg.from));
    }
    const holding = `${leg.asset.id}\u0000${leg.from}`;
    const debit = debits.get(holding);
    if (debit) debit.total += leg.amount;
    else debits.set(holding, { leg, total: leg.amount });
  }
  const checked = new Set<string>();
  for (const leg of legs) {
    const kind = leg.to === ZERO_ADDRESS ? 'burnable' : 'movable';
    if (checked.has(`${kind} ${leg.asset.id}`)) continue;
    checked.add(`${kind} ${leg.asset.id}`);
    guards.push({ kind, assetId: leg.asset.id });
  }
  for (const { leg, total } of debits.values())
    guards.push({ kind: 'holds', assetId: leg.asset.id, wallet: leg.from, atLeast: total });
  for (const { leg, total } of reserved.values())
    guards.push({ kind: 'reservedAtLeast', assetId: leg.asset.id, wallet: leg.from, atLeast: total });
  return guards;
}

/**
 * The problem of a failed guard of `legGuards(legs)`, naming the leg: `controls` (403), `movable` or
 * `burnable` (409 asset-soulbound, asset-frozen), `holds` (409, the leg at which the holding's
 * running debit first passes what it held); undefined for any other guard.
 */
export function legRefusal(legs: Leg[], failure: GuardFailure): Error | undefined {
  const { guard } = failure;
  if (guard.kind === 'controls') {
    const leg = legs.find((l) => l.from === guard.wallet);
    return leg && notControlled(leg.from, leg.place);
  }
  if (guard.kind === 'movable' || guard.kind === 'burnable') {
    const burn = guard.kind === 'burnable';
    const leg = legs.find((l) => l.asset.id === guard.assetId && (l.to === ZERO_ADDRESS) === burn);
    const place = leg?.place ?? SINGLE;
    if (failure.reason === 'soulbound')
      return new AssetSoulboundError(
        named(place, `${guard.assetId} is soulbound (non-transferable): it never moves.`),
      );
    // Issue 36: items that expire.
    if (failure.reason === 'expired')
      return new ItemExpiredError(
        named(place, `${guard.assetId} reached its end time: it never moves, trades or burns again.`),
      );
    if (failure.reason === 'lent')
      return new ItemLentError(
        named(
          place,
          `${guard.assetId} is lent: it returns to its lender at its end time and moves no other way until then.`,
        ),
      );
    if (failure.reason === 'frozen')
      return new AssetFrozenError(
        named(
          place,
          `${guard.assetId} is frozen by its collection's studio: it does not ${burn ? 'burn' : 'move'} until unfrozen.`,
        ),
      );
    return new NotFoundError(named(place, assetNotFound(guard.assetId).detail ?? ''));
  }
  if (guard.kind !== 'holds') return undefined;
  const found = failure.found ?? 0n;
  let taken = 0n;
  const leg = legs
    .filter((l) => l.asset.id === guard.assetId && l.from === guard.wallet)
    .find((l) => {
      taken += l.amount;
      return taken > found;
    });
  return leg && insufficientBalance(leg, found, taken);
}

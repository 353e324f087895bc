// Transfers: atomic moves between wallets. The caller must control `from`; the debit, the credit, the
// transfer row and its event commit together or not at all. A transfer rejected by a rule (amount,
// control, balance) is answered with a problem and leaves no row: every stored transfer completed.
// A batch (issue 21) is one plan of several such legs, all or nothing; a burn is a leg to the zero
// address that credits no one (the currency's supply goes down, a burned NFT is owned by the zero
// address and so held by no one: it never moves again).

import type { BurnPolicy } from '../../db/entities/Collection.ts';
import { Transfer } from '../../db/entities/Transfer.ts';
import type { Orm } from '../../db/orm.ts';
import { readStatements } from '../../db/read-statements.ts';
import { transferHistoryIds } from '../../db/transfer-history.ts';
import { auditDraft } from '../audit.ts';
import { burnsAsStudio, controlsWallet } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { AssetOnChainError, isChainAssetId } from './chain-assets.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import type { Idempotency, IdempotencyKey, StoredResponse, WriteResult } from './idempotency.ts';
import { endListingsOf, type ListingRow } from './listings.ts';
import { newTransferEvent } from './outbox.ts';
import type {
  AssetUpdate,
  AuctionStatusChange,
  BalanceChange,
  Guard,
  GuardFailure,
  LedgerStore,
  ListingStatusChange,
  NewAsset,
  NewEvent,
  NewPrice,
  NewSale,
  NewTrade,
  NewTransfer,
  OfferStatusChange,
  ReservedChange,
  StoreParts,
  TradeStatusChange,
} from './store/plan.ts';
import { decimalsOf, type TransferView, transferView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';

export interface TransferInput {
  assetId: string;
  from: StoredAddress;
  to: StoredAddress;
  amount: string;
}

export interface TransferFilters {
  wallet?: StoredAddress;
  assetId?: string;
  limit: number;
  cursor?: string;
}

export interface BurnInput {
  assetId: string;
  from: StoredAddress;
  amount: string;
}

export interface TransferBatchView {
  id: string;
  transfers: TransferView[];
}

/** The most legs one batch takes (the contract's `TransferBatchRequest.legs.maxItems`). */
export const MAX_BATCH_LEGS = 50;

export interface TransferService {
  create(actor: Actor, input: TransferInput, idempotencyKey?: string): Promise<WriteResult<TransferView>>;
  /** Applies every leg or none; a rejected leg's problem names it (`Leg i:`, `/body/legs/i/...`). */
  batch(
    actor: Actor,
    legs: TransferInput[],
    idempotencyKey?: string,
  ): Promise<WriteResult<TransferBatchView>>;
  /** Destroys `amount` held by `from`: a transfer to the zero address. */
  burn(actor: Actor, input: BurnInput, idempotencyKey?: string): Promise<WriteResult<TransferView>>;
  get(id: string): Promise<TransferView>;
  list(filters: TransferFilters): Promise<Page<TransferView>>;
}

/** More assets than any deployment has; past it the cache starts over (it only saves a read). */
const ASSET_FACTS_LIMIT = 100_000;

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

class BurnNotAllowedError extends ConflictError {
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

class InsufficientBalanceError extends ConflictError {
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

const SINGLE: LegPlace = { pointer: '/body', label: '' };

function legPlace(index: number): LegPlace {
  return { pointer: `/body/legs/${index}`, label: `Leg ${index}: ` };
}

/** Prefixes a problem's detail with the leg's label (`Leg 2: No asset with id silver.`). */
function named(place: LegPlace, detail: string): string {
  return place.label ? `${place.label}${detail.charAt(0).toLowerCase()}${detail.slice(1)}` : detail;
}

/** Rules that need no database: distinct wallets, no burning to the zero address. */
function checkEndpoints(input: TransferInput, place: LegPlace = SINGLE): void {
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

function amountOf(asset: AssetFacts, text: string, place: LegPlace = SINGLE, what = 'transfer'): bigint {
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
  /** A marketplace purchase (./market.ts): the listing sold (kept out of the ending below), its sale. */
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
  /** A store purchase (issue 36, ./stores.ts): the offer's units sold and the purchase row. */
  stores?: StoreParts;
  /** Issue 36, items that expire (./expiries.ts): a loan's end time and lender, set or cleared. */
  assetUpdates?: AssetUpdate[];
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
function notControlled(wallet: StoredAddress, place: LegPlace) {
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

/** Checked legs to plans: shared by transfers, batches, burns and crafts (./recipes.ts). */
export interface LegWriter {
  /** The asset's immutable facts (404 when absent, 409 asset-on-chain for an on-chain token). */
  factsOf(assetId: string): Promise<AssetFacts>;
  /** The decimals of a listing's asset and currency (from `factsOf`). */
  listingDecimals(listing: ListingRow): Promise<{ asset: number; currency: number }>;
  /**
   * Applies the legs (and `extra`) as one plan: the caller controls every `from`, and every (asset,
   * `from`) holds the sum its legs take, both as the holdings are before the plan. A burn leg credits
   * no one, lowers a currency's supply and leaves a burned NFT owned by the zero address.
   */
  apply<T>(
    actor: Actor,
    legs: Leg[],
    key: IdempotencyKey | undefined,
    at: Date,
    answer: (views: TransferView[]) => StoredResponse<T>,
    extra?: ExtraParts,
  ): Promise<WriteResult<T>>;
  /** The control of every `from` (403), checked by a read: for answers that must come first. */
  assertControls(actor: Actor, froms: { from: StoredAddress; place: LegPlace }[]): Promise<void>;
  /** One transfer or burn (`to` the zero address), answered with its transfer. */
  applySingle(
    actor: Actor,
    input: TransferInput,
    key: IdempotencyKey | undefined,
    what: 'transfer' | 'burn',
  ): Promise<WriteResult<TransferView>>;
  /**
   * Rules checked before the plan (asset, amount) must not hide the answers that come first: a
   * stored answer for the key, then the control of every `from` (403). Runs only when one failed.
   */
  earlierAnswer<T>(
    actor: Actor,
    froms: { from: StoredAddress; place: LegPlace }[],
    key: IdempotencyKey | undefined,
  ): Promise<WriteResult<T> | undefined>;
}

export function createLegWriter(orm: Orm, idempotency: Idempotency, store: LedgerStore): LegWriter {
  const reads = readStatements(orm);
  // Kept for the life of the process: an asset's kind, decimals and collection are immutable.
  const assetFacts = new Map<string, AssetFacts>();

  async function factsOf(assetId: string): Promise<AssetFacts> {
    const known = assetFacts.get(assetId);
    if (known) return known;
    const [row] = await reads.all(ASSET_FACTS, [assetId]);
    if (!row) throw assetNotFound(assetId);
    // A chain asset moves on chain only (issue 20): never cached here, so every ledger move of it
    // (transfer, batch leg, burn) is refused.
    if (isChainAssetId(assetId)) throw new AssetOnChainError(assetId);
    const kind = row.kind as AssetFacts['kind'];
    const facts: AssetFacts = {
      id: assetId,
      kind,
      decimals: decimalsOf({ kind, decimals: row.decimals == null ? null : Number(row.decimals) }),
      collectionId: row.collection_id as string,
      collectionOwner: row.collection_owner as string,
      burnPolicy: row.burn_policy as BurnPolicy,
    };
    if (assetFacts.size >= ASSET_FACTS_LIMIT) assetFacts.clear();
    assetFacts.set(assetId, facts);
    return facts;
  }

  /** The decimals a listing's amounts are published with (its asset's, its currency's). */
  async function listingDecimals(listing: ListingRow) {
    const [asset, currency] = [await factsOf(listing.assetId), await factsOf(listing.currencyId)];
    return { asset: asset.decimals, currency: currency.decimals };
  }

  /** The leg's transfer as stored and answered; everything in it is known before anything is written. */
  function transferOf(leg: Leg, actor: Actor, now: Date) {
    const id = newId('tr');
    const view = transferView(
      {
        id,
        asset: { id: leg.asset.id },
        fromAddress: leg.from,
        toAddress: leg.to,
        amount: leg.amount,
        status: 'completed',
        failureReason: null,
        createdAt: now,
        completedAt: now,
      },
      leg.asset.decimals,
    );
    return {
      id,
      view,
      row: {
        id,
        assetId: leg.asset.id,
        from: leg.from,
        to: leg.to,
        amount: leg.amount,
        requestedBy: actor.userId,
        createdAt: now,
      },
      event: newTransferEvent(view, leg.asset.collectionId, now),
    };
  }

  /**
   * Rules checked before the plan (asset, amount) must not hide the answers that come first: a
   * stored answer for the key, then the control of every `from` (403). Runs only when one failed.
   */
  async function earlierAnswer<T>(
    actor: Actor,
    froms: { from: StoredAddress; place: LegPlace }[],
    key: IdempotencyKey | undefined,
  ) {
    if (key) {
      const record = await idempotency.find(key);
      if (record) return idempotency.replay<T>(record, key);
    }
    await assertControls(actor, froms);
    return undefined;
  }

  async function assertControls(actor: Actor, froms: { from: StoredAddress; place: LegPlace }[]) {
    for (const { from, place } of froms) {
      const [controlled] = await reads.all(CONTROLLED, [from, actor.userId]);
      if (!controlled) throw notControlled(from, place);
    }
  }

  async function applyLegs<T>(
    actor: Actor,
    legs: Leg[],
    key: IdempotencyKey | undefined,
    at: Date,
    answer: (views: TransferView[]) => StoredResponse<T>,
    extra: ExtraParts = {},
  ): Promise<WriteResult<T>> {
    // 30.5: the burn policy of the asset's collection holds for every burn leg (a craft's inputs too).
    for (const leg of legs)
      if (leg.to === ZERO_ADDRESS && leg.asset.burnPolicy === 'none')
        throw new BurnNotAllowedError(leg.asset.id, leg.asset.collectionId, leg.place);
    const transfers = legs.map((leg) => transferOf(leg, actor, at));
    const response = answer(transfers.map((t) => t.view));
    const guards = legGuards(actor, legs);
    const balances: BalanceChange[] = [];
    const supplies: { assetId: string; delta: bigint }[] = [];
    const owners: { assetId: string; owner: StoredAddress }[] = [];
    const reserves: ReservedChange[] = [...(extra.reserves ?? [])];
    for (const leg of legs) {
      if (leg.fromReserved) reserves.push({ assetId: leg.asset.id, wallet: leg.from, delta: -leg.amount });
      balances.push({ assetId: leg.asset.id, wallet: leg.from, delta: -leg.amount });
      if (leg.to !== ZERO_ADDRESS)
        balances.push({ assetId: leg.asset.id, wallet: leg.to, delta: leg.amount });
      else if (leg.asset.kind === 'fungible') supplies.push({ assetId: leg.asset.id, delta: -leg.amount });
      if (leg.asset.kind === 'nft') owners.push({ assetId: leg.asset.id, owner: leg.to });
    }
    if (extra.supplies) supplies.push(...extra.supplies);
    // Issue 35: a listed NFT that moves or burns ends its active listings in this same plan.
    const ended = await endListingsOf(
      reads,
      listingDecimals,
      legs
        .filter((leg) => leg.asset.kind === 'nft')
        .map((leg) => ({ assetId: leg.asset.id, reason: leg.to === ZERO_ADDRESS ? 'burned' : 'moved' })),
      at,
      new Set(extra.listingStatuses?.map((change) => change.listingId)),
    );
    const listingStatuses = [...(extra.listingStatuses ?? []), ...ended.listingStatuses];
    const outcome = await store.apply({
      at,
      idempotency: key && { key, response },
      guards: [...(extra.leading ?? []), ...guards, ...(extra.guards ?? [])],
      assets: extra.assets,
      trades: extra.trades,
      tradeStatuses: extra.tradeStatuses,
      assetUpdates: extra.assetUpdates,
      balances: extra.balances ? [...balances, ...extra.balances] : balances,
      supplies: supplies.length ? supplies : undefined,
      owners: owners.length ? owners : undefined,
      listingStatuses: listingStatuses.length ? listingStatuses : undefined,
      offerStatuses: extra.offerStatuses,
      auctionStatuses: extra.auctionStatuses,
      reserves: reserves.length ? reserves : undefined,
      sales: extra.sales,
      transfers: [...transfers.map((t) => t.row), ...(extra.transfers ?? [])],
      prices: extra.prices,
      events: [...transfers.map((t) => t.event), ...(extra.events ?? []), ...ended.events],
      operationId: extra.operationId,
      ...extra.stores,
      // Issue 37: a burn by the collection's studio (or an admin) is audited with it.
      audit: legs.flatMap((leg, i) =>
        leg.byStudio
          ? [
              auditDraft(
                'asset.burned',
                {
                  type: 'asset',
                  id: leg.asset.id,
                  ownerId: leg.asset.collectionOwner,
                  collectionId: leg.asset.collectionId,
                },
                { after: { from: leg.from, amount: leg.amount, transfer: transfers[i].id } },
                at,
              ),
            ]
          : [],
      ),
    });
    switch (outcome.outcome) {
      case 'applied':
        return { ...response, replayed: false };
      case 'replay':
        return idempotency.replay<T>(outcome.record, key as IdempotencyKey);
      case 'rejected':
        throw (
          extra.refuse?.(outcome) ??
          legRefusal(legs, outcome) ??
          extra.rejected?.(outcome) ??
          new Error(`Unexpected guard ${outcome.guard.kind}.`)
        );
    }
  }

  /**
   * The collection's burn policy: `none` refuses every burn; under `holder_or_studio` the collection's
   * studio (with the studio role: src/domain/authorization.ts) or an admin burns from any holder's
   * wallet (true: no `controls` guard); otherwise the holder burns, from a wallet they control.
   */
  function burnRule(actor: Actor, asset: AssetFacts): boolean {
    if (asset.burnPolicy === 'none') throw new BurnNotAllowedError(asset.id, asset.collectionId);
    return burnsAsStudio(actor, { id: asset.collectionId, ownerId: asset.collectionOwner }, asset.burnPolicy);
  }

  /** One transfer or burn (`to` the zero address), answered with its transfer. */
  async function applySingle(
    actor: Actor,
    input: TransferInput,
    key: IdempotencyKey | undefined,
    what: 'transfer' | 'burn',
  ): Promise<WriteResult<TransferView>> {
    let leg: Leg;
    try {
      const asset = await factsOf(input.assetId);
      const amount = amountOf(asset, input.amount, SINGLE, what);
      leg = { asset, amount, from: input.from, to: input.to, place: SINGLE };
      if (what === 'burn') leg.byStudio = burnRule(actor, asset);
    } catch (error) {
      const earlier = await earlierAnswer<TransferView>(actor, [{ from: input.from, place: SINGLE }], key);
      if (earlier) return earlier;
      throw error;
    }
    return applyLegs(actor, [leg], key, new Date(), ([view]) => ({
      status: 201,
      body: view,
      headers: { Location: `/api/v1/transfers/${view.id}` },
    }));
  }

  return { factsOf, listingDecimals, apply: applyLegs, assertControls, applySingle, earlierAnswer };
}

export function createTransferService(
  orm: Orm,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter = createLegWriter(orm, idempotency, store),
): TransferService {
  const { factsOf, apply: applyLegs, applySingle, earlierAnswer } = writer;
  return {
    async create(actor, input, idempotencyKey) {
      checkEndpoints(input);
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTransfer',
        key: idempotencyKey,
        request: input,
      });
      return applySingle(actor, input, key, 'transfer');
    },

    async batch(actor, inputs, idempotencyKey) {
      if (inputs.length === 0 || inputs.length > MAX_BATCH_LEGS) {
        throw new ValidationError(`A batch holds 1 to ${MAX_BATCH_LEGS} legs.`, [
          { pointer: '/body/legs', detail: `must hold 1 to ${MAX_BATCH_LEGS} legs` },
        ]);
      }
      inputs.forEach((input, i) => {
        checkEndpoints(input, legPlace(i));
      });
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTransferBatch',
        key: idempotencyKey,
        request: { legs: inputs },
      });
      const legs: Leg[] = [];
      try {
        for (const [i, input] of inputs.entries()) {
          const place = legPlace(i);
          let asset: AssetFacts;
          try {
            asset = await factsOf(input.assetId);
          } catch (error) {
            if (error instanceof NotFoundError) throw new NotFoundError(named(place, error.detail ?? ''));
            throw error;
          }
          legs.push({
            asset,
            amount: amountOf(asset, input.amount, place),
            from: input.from,
            to: input.to,
            place,
          });
        }
      } catch (error) {
        const froms = inputs.map((input, i) => ({ from: input.from, place: legPlace(i) }));
        const earlier = await earlierAnswer<TransferBatchView>(actor, froms, key);
        if (earlier) return earlier;
        throw error;
      }
      const id = newId('op');
      return applyLegs(
        actor,
        legs,
        key,
        new Date(),
        (transfers) => ({ status: 201, body: { id, transfers }, headers: {} }),
        { operationId: id },
      );
    },

    async burn(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'burnAsset',
        key: idempotencyKey,
        request: input,
      });
      return applySingle(actor, { ...input, to: ZERO_ADDRESS }, key, 'burn');
    },

    async get(id) {
      const transfer = await orm.em.fork().findOne(Transfer, { id }, { populate: ['asset'] });
      if (!transfer) throw new NotFoundError(`No transfer with id ${id}.`);
      return transferView(transfer, decimalsOf(transfer.asset.getEntity()));
    },

    async list({ wallet, assetId, limit, cursor }) {
      const before = decodeCursor(cursor, 'transfers', isInteger);
      const em = orm.em.fork();
      const ids = await transferHistoryIds(em, { wallet, assetId, before, limit: limit + 1 });
      const rows =
        ids.length === 0
          ? []
          : await em.find(Transfer, { id: { $in: ids } }, { populate: ['asset'], orderBy: { seq: 'desc' } });
      const result = page(rows, limit, 'transfers', (row) => row.seq);
      return {
        data: result.data.map((row) => transferView(row, decimalsOf(row.asset.getEntity()))),
        next_cursor: result.next_cursor,
      };
    },
  };
}

const CONTROLLED = 'select 1 as yes from wallet where address = ? and user_id = ?';
const ASSET_FACTS =
  'select a.kind, a.decimals, a.collection_id, c.owner_id as collection_owner, c.burn_policy ' +
  'from asset a join collection c on c.id = a.collection_id where a.id = ?';

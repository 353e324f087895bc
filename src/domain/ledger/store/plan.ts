// The ledger store's contract (DESIGN.md §4): the domain decides every ledger write as a PLAN (what
// must still hold when the write runs, and every row it changes), and a store applies the plan in one
// transaction or not at all. A store decides nothing: it checks the plan's guards against the rows as
// they are inside its transaction, applies the changes, and reports what it committed to the commit
// hook before it answers. There are two stores, SQLite (./sqlite.ts) and PostgreSQL (./postgres.ts);
// test/conformance/ledger-store.test.ts holds both to the same cases.
//
// A plan may carry any number of legs: a batch transfer is one plan with more guards and changes, a
// change without guards (an on-chain transfer applied as seen) is one whose `guards` is empty.
import type { components } from '../../../../generated/openapi/types.ts';
import type { EventType } from '../../../db/entities/OutboxEvent.ts';
import type { TradeItem, TradeStatus } from '../../../db/entities/Trade.ts';
import type { StoredAddress } from '../addresses.ts';

/** A write's answer, stored for replay (the domain's, see ../idempotency.ts). */
export interface StoredResponse<T> {
  status: number;
  body: T;
  headers: Record<string, string>;
}

/** The record a keyed request reads and writes: its id, the hash of its request, its expiry. */
export interface IdempotencyKey {
  id: string;
  requestHash: string;
  expiresAt(now: Date): Date;
}

/**
 * What must hold inside the store's transaction, checked in order before any change is applied,
 * against the state before the plan (a guard never sees the plan's own changes). The first that fails
 * ends the plan: nothing is written and the store answers `rejected` with it.
 */
export type Guard =
  /** `userId` controls `wallet` (the wallet row names the user). */
  | { kind: 'controls'; userId: string; wallet: StoredAddress }
  /** `wallet` holds at least `atLeast` of `assetId` (an absent holding holds 0). */
  | { kind: 'holds'; assetId: string; wallet: StoredAddress; atLeast: bigint }
  /** The currency's total supply plus `adding` stays at or below `max`. */
  | { kind: 'supplyWithin'; assetId: string; adding: bigint; max: bigint }
  /** No asset has the id `assetId` yet. */
  | { kind: 'assetAbsent'; assetId: string }
  /** No wallet row has the address `wallet` yet. */
  | { kind: 'walletAbsent'; wallet: StoredAddress }
  /**
   * The asset exists and may move: not frozen, not soulbound, its collection not soulbound. On
   * PostgreSQL the check shares the asset row (FOR KEY SHARE) until commit, so a freeze (an
   * `assetUpdates` change, which locks the row FOR UPDATE) commits either before the check reads the
   * row (the plan is rejected) or after the plan commits.
   */
  | { kind: 'movable'; assetId: string }
  /** The asset exists and may be burned: not frozen (a soulbound asset may burn). Locks as `movable`. */
  | { kind: 'burnable'; assetId: string }
  /** The trade exists, is `open` and `expiresAt > at`. Locks the trade row until commit (PostgreSQL). */
  | { kind: 'tradeOpen'; tradeId: string; at: Date }
  /**
   * The asset's metadata_version is `version` (and, when given, its `frozen` is `frozen` and its
   * `owner` is `owner`): the update was decided against that state, and its event carries it. On
   * failure `found` is the version found. The store locks the asset (FOR UPDATE) before the guards, as every asset `assetUpdates`
   * names.
   */
  | { kind: 'assetVersion'; assetId: string; version: number; frozen?: boolean; owner?: string | null };

/**
 * Why a `movable`, `burnable`, `tradeOpen` or `assetVersion` guard failed: `missing` (no such asset or
 * trade), `frozen`, `soulbound` (the asset's or its collection's), a trade's closed status
 * (`accepted`, `cancelled`) or `expired`.
 */
export type GuardReason = 'missing' | 'frozen' | 'soulbound' | 'accepted' | 'cancelled' | 'expired';

/** A failed guard, with what the store found when the guard is about an amount (balance or supply). */
export interface GuardFailure {
  guard: Guard;
  /** `holds`: the balance found; `supplyWithin`: the supply found; `assetVersion`: the version found. */
  found?: bigint;
  /** `movable`, `burnable`, `tradeOpen` (and `assetVersion` on a missing asset): why it failed. */
  reason?: GuardReason;
}

/** Adds `delta` (negative: takes) to the holding of (`assetId`, `wallet`), creating it when missing. */
export interface BalanceChange {
  assetId: string;
  wallet: StoredAddress;
  delta: bigint;
}

export interface NewAsset {
  id: string;
  kind: 'nft' | 'fungible';
  name: string;
  description: string | null;
  metadata: Record<string, unknown>;
  collectionId: string;
  creatorId: string;
  symbol: string | null;
  decimals: number | null;
  totalSupply: bigint | null;
  maxSupply: bigint | null;
  owner: StoredAddress | null;
  /** Non-transferable (default false). */
  soulbound?: boolean;
  createdAt: Date;
}

export interface NewTransfer {
  id: string;
  assetId: string;
  from: StoredAddress;
  to: StoredAddress;
  amount: bigint;
  requestedBy: string | null;
  createdAt: Date;
}

export interface NewPrice {
  assetId: string;
  price: string;
  priceScaled: bigint;
  currency: string;
  source: string;
  observedAt: Date;
  postedBy: string;
  createdAt: Date;
}

export interface NewWallet {
  address: StoredAddress;
  userId: string;
  kind: 'custodial' | 'linked';
  encryptedPrivateKey: string | null;
  createdAt: Date;
}

/** A trade row (../../../db/entities/Trade.ts), as proposed. */
export interface NewTrade {
  id: string;
  status: TradeStatus;
  proposerUserId: string;
  proposerWallet: StoredAddress;
  counterpartyWallet: StoredAddress;
  /** What the proposer gives: amounts as decimal strings of base units. */
  offer: TradeItem[];
  /** What the counterparty gives, same shape. */
  request: TradeItem[];
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
  operationId: string | null;
  closedBy: string | null;
}

/** Closes a trade: sets its status, `closed_by`, `operation_id` and `updated_at` (= `at`). */
export interface TradeStatusChange {
  tradeId: string;
  status: 'accepted' | 'cancelled';
  by: string;
  operationId: string | null;
  at: Date;
}

/** Sets the given columns of an asset (an absent field is left as it is). Locks the asset first. */
export interface AssetUpdate {
  assetId: string;
  name?: string;
  description?: string | null;
  metadata?: Record<string, unknown>;
  frozen?: boolean;
  /** Who froze the asset, set with `frozen` (null when unfreezing). */
  frozenBy?: string | null;
  soulbound?: boolean;
  /** The new metadata_version (the domain guards the one it read with `assetVersion`). */
  metadataVersion?: number;
}

/** An asset_metadata_version row: the asset's name and metadata as of `version`. */
export interface NewMetadataVersion {
  assetId: string;
  version: number;
  name: string;
  metadata: Record<string, unknown>;
  changedBy: string | null;
  changedAt: Date;
}

/** A published event as the contract declares it (the envelope of `GET /api/v1/events`, `/ws`). */
export type PublishedEventBody = components['schemas']['Event'];

/** Each event type's payload, from the contract (`newNFT`: Asset, `newTransfer`: Transfer, ...). */
export type EventData<Type extends EventType> = Extract<PublishedEventBody, { type: Type }>['data'];

/** An outbox event row (its id is drawn by the store): its payload is the contract's for its type. */
export type NewEvent = {
  [Type in EventType]: {
    type: Type;
    occurredAt: Date;
    data: EventData<Type>;
    assetId: string;
    collectionId?: string | null;
    wallets: string[];
    fromWallet?: string | null;
    toWallet?: string | null;
  };
}[EventType];

/** An internal ledger_change row: a change that publishes no event but changes cached reads. */
export interface NewLedgerChange {
  kind: 'walletLinked';
  occurredAt: Date;
  userId: string | null;
  wallet: string | null;
}

/** One ledger write as the domain decided it. Every list may be empty. */
export interface Plan {
  /** When the write happens: the idempotency record's creation (its expiry counts from it), updated_at. */
  at: Date;
  /** The request's idempotency record and the answer it stores (none without a key). */
  idempotency?: { key: IdempotencyKey; response: StoredResponse<unknown> };
  guards: Guard[];
  /** Rows created first (holdings, transfers and prices may refer to them). */
  assets?: NewAsset[];
  wallets?: NewWallet[];
  balances?: BalanceChange[];
  /** Adds `delta` to a currency's total supply. */
  supplies?: { assetId: string; delta: bigint }[];
  /** Sets an NFT's `owner`. */
  owners?: { assetId: string; owner: StoredAddress }[];
  /** Asset columns set (frozen, soulbound, name, metadata, version...), applied after `owners`. */
  assetUpdates?: AssetUpdate[];
  /** Metadata version rows, inserted after `assetUpdates`. */
  metadataVersions?: NewMetadataVersion[];
  /** Trade rows created. */
  trades?: NewTrade[];
  /** Trades closed (accepted or cancelled), applied after `trades`. */
  tradeStatuses?: TradeStatusChange[];
  /** Transfer rows; the store draws their `seq`. */
  transfers?: NewTransfer[];
  prices?: NewPrice[];
  /** Outbox events, in the order their ids are drawn. */
  events?: NewEvent[];
  /**
   * The operation (`op_` id) of a multi-part write (a batch, a batch mint, a craft, a trade's
   * settlement): every event of the plan carries it (the envelope's `operationId`).
   */
  operationId?: string;
  ledgerChanges?: NewLedgerChange[];
}

/**
 * How a plan ended: applied (committed, reported to the commit hook); `replay` when its idempotency
 * key already holds an unexpired record (nothing applied; the record's columns as stored, for
 * Idempotency.replay); `rejected` when a guard failed (nothing applied).
 */
export type PlanOutcome =
  | { outcome: 'applied' }
  | { outcome: 'replay'; record: Record<string, unknown> }
  | ({ outcome: 'rejected' } & GuardFailure);

/** Applies ledger plans atomically. Every ledger write goes through `apply`. */
export interface LedgerStore {
  apply(plan: Plan): Promise<PlanOutcome>;
}

/**
 * A plan whose changes would break an invariant no guard covered (a balance below zero from an
 * unguarded delta): rolled back, and this error reaches the caller. A domain that guards its debits
 * never sees it.
 */
export class NegativeBalanceError extends Error {
  constructor(assetId: string, wallet: string) {
    super(`The plan takes ${wallet}'s balance of ${assetId} below zero.`);
  }
}

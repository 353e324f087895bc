// The ledger store's contract (DESIGN.md §4): the domain decides every ledger write as a PLAN (what
// must still hold when the write runs, and every row it changes), and a store applies the plan in one
// transaction or not at all. A store decides nothing: it checks the plan's guards against the rows as
// they are inside its transaction, applies the changes, and reports what it committed to the commit
// hook before it answers. There are two stores, SQLite (./sqlite.ts) and PostgreSQL (./postgres.ts);
// test/conformance/ledger-store.test.ts holds both to the same cases.
//
// A plan may carry any number of legs: a batch transfer is one plan with more guards and changes, a
// change without guards (an on-chain transfer applied as seen) is one whose `guards` is empty.
import { createHash } from 'node:crypto';
import type { components } from '../../../../generated/openapi/types.ts';
import type { ListingEndReason } from '../../../db/entities/Listing.ts';
import type { EventType } from '../../../db/entities/OutboxEvent.ts';
import type { TradeItem, TradeStatus } from '../../../db/entities/Trade.ts';
import type { StoredRecord } from '../../../db/stored-answer.ts';
import type { AuditDraft } from '../../audit.ts';
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
  /**
   * `wallet` holds at least `atLeast` of `assetId` free to spend: its balance less its reserved part
   * (an absent holding holds 0).
   */
  | {
      kind: 'holds';
      assetId: string;
      wallet: StoredAddress;
      atLeast: bigint;
      /**
       * Issue 36, timed currency grants: the units of the wallet's lots past their end at the plan's
       * `at` are never free (swept or not); with `untimed` (a reservation: timed units are never
       * escrowed) no unit of any lot is.
       */
      untimed?: boolean;
    }
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
  // Issue 36, items that expire: `movable` also fails with `expired` when the NFT's end time is at or
  // before the plan's `at` (swept or not yet), and with `lent` while it is lent (it moves only back to
  // its lender, by the expiry sweep); `burnable` fails with `expired` and `lent` too.
  /** The asset exists and may be burned: not frozen (a soulbound asset may burn). Locks as `movable`. */
  | { kind: 'burnable'; assetId: string }
  /** The trade exists, is `open` and `expiresAt > at`. Locks the trade row until commit (PostgreSQL). */
  | { kind: 'tradeOpen'; tradeId: string; at: Date }
  /**
   * The listing exists, is `active` and (with `at`) not past its `expiresAt` at `at`: the expiry
   * sweep, which ends expired listings, gives no `at`. Locks the listing row until commit
   * (PostgreSQL), so of two purchases (or a purchase and a cancellation) exactly one applies.
   */
  | { kind: 'listingActive'; listingId: string; at?: Date }
  /**
   * Issue 35, offers: the offer exists and is `open` (and, with `at`, not past its `expiresAt`: an
   * acceptance; a release of its funds gives no `at`). Locks the offer row until commit (PostgreSQL),
   * so of an acceptance and a cancellation (or two acceptances) exactly one applies.
   */
  | { kind: 'offerOpen'; offerId: string; at?: Date }
  /** The reserved part of (`assetId`, `wallet`) is at least `atLeast` (a payment from a reservation). */
  | { kind: 'reservedAtLeast'; assetId: string; wallet: StoredAddress; atLeast: bigint }
  /**
   * Issue 35, auctions: the auction exists and is `open`, its best bid is `bestBid` (null: none; a
   * bid was decided against it, reason `changed` otherwise), and at `at` it has not ended (a bid) or,
   * with `ended`, it has (`endsAt <= at`: a settlement; reason `open` before). Locks the auction row
   * until commit (PostgreSQL): two bids, or two settlements, never both pass on the same state.
   */
  | { kind: 'auctionOpen'; auctionId: string; at: Date; ended?: boolean; bestBid?: bigint | null }
  /**
   * The asset's metadata_version is `version` (and, when given, its `frozen` is `frozen` and its
   * `owner` is `owner`): the update was decided against that state, and its event carries it. On
   * failure `found` is the version found. The store locks the asset (FOR UPDATE) before the guards, as every asset `assetUpdates`
   * names.
   */
  | { kind: 'assetVersion'; assetId: string; version: number; frozen?: boolean; owner?: string | null }
  // ---- Stores (issue 36) ----
  /**
   * The store offer exists, is `active`, at `version`, inside its window at `at` (`startsAt <= at <
   * endsAt`), and `quantity` more units keep its units sold within `limitTotal` and `wallet`'s units
   * within `limitPerWallet`. Locks the offer row until commit (PostgreSQL), so of two purchases of
   * the last unit exactly one applies. Reasons: `missing`, `closed`, `version`, `notStarted`,
   * `expired`, `soldOut`, `walletLimit`.
   */
  | {
      kind: 'offerAvailable';
      offerId: string;
      version: number;
      wallet: StoredAddress;
      quantity: number;
      at: Date;
    }
  // ---- Loot boxes and draws (issue 36) ----
  /**
   * The draw seed exists, belongs to `wallet`, is `active` and its next nonce is `nonce`. Locks the
   * seed row until commit (PostgreSQL): a wallet's openings, and a reveal, take its nonces one at a
   * time. Reasons: `missing`, `revealed`, `nonce`.
   */
  | { kind: 'seedAt'; seedId: string; wallet: StoredAddress; nonce: number }
  /** The wallet's pity counter of the box (an absent row counts 0) is `count`. Reason: `pity`. */
  | { kind: 'pityAt'; boxId: string; wallet: StoredAddress; count: number }
  // ---- Items that expire (issue 36) ----
  /**
   * The NFT's end time is `expiresAt` (null: it has none) and, when given, its owner is `owner`
   * (reason `changed` otherwise; `missing`: no such asset); with `due`, the end time is at or before
   * the plan's `at` (reason `open` before). The expiry sweep's guard: once an item was returned (its
   * end time cleared, its owner the lender) or burned (its owner the zero address) the same plan is
   * refused, so an expiry applies once. A loan's guard (`expiresAt` null: not lent or timed yet).
   * Locks the asset row FOR UPDATE (PostgreSQL; it joins `asset_locks`).
   */
  | { kind: 'assetExpiry'; assetId: string; expiresAt: Date | null; owner?: StoredAddress; due?: boolean }
  // ---- Timed currency grants (issue 36) ----
  /**
   * The lot exists, holds `amount` of `assetId` in `wallet` (reason `changed` otherwise; `missing`: no
   * such lot, e.g. swept or spent already) and its end time is at or before the plan's `at` (reason
   * `open` before). The lot sweep's guard: once burned the lot is gone, so its burn applies once. The
   * holding it debits is locked (PostgreSQL: the plan's `locks`) before it is read.
   */
  | { kind: 'lotAt'; lotId: string; assetId: string; wallet: StoredAddress; amount: bigint };

/**
 * Why a `movable`, `burnable`, `tradeOpen` or `assetVersion` guard failed: `missing` (no such asset or
 * trade), `frozen`, `soulbound` (the asset's or its collection's), a trade's closed status
 * (`accepted`, `cancelled`) or `expired`.
 */
export type GuardReason =
  | 'missing'
  | 'frozen'
  | 'soulbound'
  | 'accepted'
  | 'cancelled'
  | 'expired'
  | 'sold'
  | 'ended'
  // ---- Stores (issue 36): an `offerAvailable` guard's ----
  | 'closed'
  | 'version'
  | 'notStarted'
  | 'soldOut'
  | 'walletLimit'
  // ---- Loot boxes and draws (issue 36): `seedAt`'s and `pityAt`'s ----
  | 'revealed'
  | 'nonce'
  | 'pity'
  // ---- Auctions (issue 35) ----
  | 'unsold'
  | 'changed'
  | 'open'
  // ---- Items that expire (issue 36): `movable`'s, `burnable`'s (also `expired`) ----
  | 'lent';

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
  /** Issue 36, items that expire: the NFT's end time (absent: none) and the wallet that lent it. */
  expiresAt?: Date | null;
  lender?: StoredAddress | null;
  /**
   * Issue 37: a ledger NFT's mint, which writes no transfer row: the wallet it is minted to. The store
   * keeps it (`asset.minted_to`) with a value of the transfers' counter (`asset.mint_seq`), the
   * mint's place in that wallet's history.
   */
  mintedTo?: StoredAddress;
  createdAt: Date;
}

/**
 * A transfer row. Issue 36, timed currency grants: the store takes the units it debits from the
 * sender's live lots first (soonest end first) and moves them as lots of the receiver (same end time
 * and source; a burn consumes them); with `lotId` (the lot sweep's burn) it takes them from that lot.
 */
export interface NewTransfer {
  id: string;
  assetId: string;
  from: StoredAddress;
  to: StoredAddress;
  amount: bigint;
  requestedBy: string | null;
  createdAt: Date;
  lotId?: string;
}

/** Issue 36: a lot of timed units of a currency granted to `wallet` (credited by the same plan). */
export interface NewLot {
  id: string;
  assetId: string;
  wallet: StoredAddress;
  amount: bigint;
  expiresAt: Date;
  /** The transfer that granted the units. */
  sourceId: string;
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

/** A listing row (../../../db/entities/Listing.ts), as created (active). */
export interface NewListing {
  id: string;
  sellerUserId: string;
  sellerWallet: StoredAddress;
  assetId: string;
  collectionId: string;
  /** Base units listed (1 for an NFT). */
  amount: bigint;
  currencyId: string;
  /** The whole price in base units of the currency. */
  price: bigint;
  expiresAt: Date | null;
  createdAt: Date;
  /**
   * Its item's metadata as read for the listing: the store writes a `listing_trait` row per attribute
   * value (./listing-traits.ts) with the listing, and deletes them when the listing closes.
   */
  metadata: Record<string, unknown>;
}

/** Closes a listing: its status, end reason, `closed_by`, `operation_id` and `updated_at` (= `at`). */
export interface ListingStatusChange {
  listingId: string;
  status: 'sold' | 'cancelled' | 'ended' | 'expired';
  reason: ListingEndReason | null;
  by: string | null;
  operationId: string | null;
  at: Date;
}

/** A sale row: amounts in base units of the currency, `price` = `sellerProceeds` + `royalty` + `fee`. */
export interface NewSale {
  id: string;
  listingId: string;
  assetId: string;
  collectionId: string;
  amount: bigint;
  currencyId: string;
  price: bigint;
  royalty: bigint;
  fee: bigint;
  sellerProceeds: bigint;
  sellerWallet: StoredAddress;
  buyerWallet: StoredAddress;
  createdAt: Date;
}

// ---- Issue 35: offers and reserved balances ----

/** An offer row (../../../db/entities/Offer.ts), as created (open). */
export interface NewOffer {
  id: string;
  bidderUserId: string;
  bidderWallet: StoredAddress;
  /** The NFT offered for; null: any NFT of `collectionId` (with `trait`, any having that attribute). */
  assetId: string | null;
  collectionId: string;
  /** A trait offer's attribute (`trait_type` and value as text); null for an item or collection offer. */
  trait: { type: string; value: string } | null;
  currencyId: string;
  /** The whole price in base units of the currency. */
  price: bigint;
  expiresAt: Date | null;
  createdAt: Date;
}

/** Closes an open offer (only an open one: the store leaves a closed offer as it closed). */
export interface OfferStatusChange {
  offerId: string;
  status: 'accepted' | 'cancelled' | 'expired';
  by: string | null;
  operationId: string | null;
  /** The NFT an acceptance sold. */
  soldAssetId: string | null;
  at: Date;
}

/**
 * Adds `delta` (negative: releases) to the reserved part of the holding (`assetId`, `wallet`). Applied
 * before `balances`; the store keeps `0 <= reserved <= balance` (else the plan fails as a negative
 * balance would), so reserved units are never spent by a balance change.
 */
export interface ReservedChange {
  assetId: string;
  wallet: StoredAddress;
  delta: bigint;
}

/** An auction row (../../../db/entities/Auction.ts), as opened (the item escrowed by `reserves`). */
export interface NewAuction {
  id: string;
  sellerUserId: string;
  sellerWallet: StoredAddress;
  assetId: string;
  collectionId: string;
  currencyId: string;
  reservePrice: bigint;
  minIncrement: bigint;
  endsAt: Date;
  extensionSeconds: number;
  createdAt: Date;
}

/** A new best bid on an open auction (its count + 1, `endsAt` as extended). */
export interface AuctionBidChange {
  auctionId: string;
  amount: bigint;
  bidder: StoredAddress;
  bidderUserId: string;
  endsAt: Date;
  at: Date;
}

/** Settles (or its seller cancels) an open auction (only an open one). */
export interface AuctionStatusChange {
  auctionId: string;
  status: 'sold' | 'unsold' | 'cancelled';
  operationId: string;
  at: Date;
}

// ---- end of issue 35's offers and auctions block ----

// ---- Stores (issue 36) ----

/** Units of a store offer sold by a purchase: adds `quantity` to its `sold` and to `wallet`'s count. */
export interface OfferSale {
  offerId: string;
  wallet: StoredAddress;
  quantity: number;
}

/** A store_purchase row (../../../db/entities/StoreOffer.ts): amounts as answered (decimal strings). */
export interface NewStorePurchase {
  id: string;
  offerId: string;
  version: number;
  collectionId: string;
  wallet: StoredAddress;
  userId: string;
  quantity: number;
  paid: { assetId: string; amount: string }[];
  payTo: StoredAddress;
  granted: { assetId: string; amount: string }[];
  createdAt: Date;
}

// ---- Loot boxes and draws (issue 36) ----

/** A draw row (../../../db/entities/LootBox.ts, table `draw`): the contract's Draw in `data`. */
export interface NewDraw {
  id: string;
  boxId: string;
  assetId: string;
  wallet: StoredAddress;
  seedId: string;
  nonce: number;
  data: components['schemas']['Draw'];
  createdAt: Date;
}

/**
 * The plan parts of the stores and loot boxes (issue 36), applied after `sales` and before
 * `transfers`: offers' units sold, purchase rows; seeds' next nonces, pity counters, draw rows.
 */
export interface StoreParts {
  offerSales?: OfferSale[];
  storePurchases?: NewStorePurchase[];
  /** Sets a draw seed's next nonce. */
  seedNonces?: { seedId: string; next: number }[];
  /** Sets a wallet's pity counter of a box (creating the row). */
  pityCounts?: { boxId: string; wallet: StoredAddress; count: number }[];
  draws?: NewDraw[];
}

/** Sets the given columns of an asset (an absent field is left as it is). Locks the asset first. */
export interface AssetUpdate {
  assetId: string;
  name?: string;
  description?: string | null;
  /**
   * With it the store also rewrites the `listing_trait` rows of the asset's active listings from the
   * new attributes (issue 35: a listing is found under its item's current attribute values).
   */
  metadata?: Record<string, unknown>;
  frozen?: boolean;
  /** Who froze the asset, set with `frozen` (null when unfreezing). */
  frozenBy?: string | null;
  soulbound?: boolean;
  /** The new metadata_version (the domain guards the one it read with `assetVersion`). */
  metadataVersion?: number;
  /** Issue 36, items that expire: the end time and the lender (a loan sets both, a return clears both). */
  expiresAt?: Date | null;
  lender?: StoredAddress | null;
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
    /**
     * Written only if this plan's `listingStatuses` change of that listing changed its row (issue 35:
     * a listing closed meanwhile stays as it closed, and its end is not announced twice).
     */
    onlyIfListingClosed?: string;
    /**
     * Issue 36: the event's own operation (`op_` id), for a plan that applies several operations (the
     * expiry sweep's batch: one per item); absent, the plan's `operationId`.
     */
    operationId?: string;
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
export interface Plan extends StoreParts {
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
  /** Listing rows created (issue 35). */
  listings?: NewListing[];
  /** Listings closed (sold, cancelled, ended), applied after `listings`. */
  listingStatuses?: ListingStatusChange[];
  /** Sale rows. */
  sales?: NewSale[];
  /** Issue 35: offer rows created (open). */
  offers?: NewOffer[];
  /** Issue 35: offers closed (accepted, cancelled, expired), applied after `offers`. */
  offerStatuses?: OfferStatusChange[];
  /** Issue 35: reserved parts of holdings changed, applied before `balances`. */
  reserves?: ReservedChange[];
  /** Issue 35: auction rows opened, best bids, settlements (in this order). */
  auctions?: NewAuction[];
  auctionBids?: AuctionBidChange[];
  auctionStatuses?: AuctionStatusChange[];
  /**
   * Transfer rows; the store draws their `seq`. Issue 36: after them the store moves the lots their
   * debits took, then inserts `lots`, then keeps `sum(lots) + reserved <= balance` for every holding
   * the plan debits or reserves on (trimming the soonest lots of a debit no guard covered).
   */
  transfers?: NewTransfer[];
  /** Issue 36: lots of timed units granted by this plan (after the transfers' lot moves). */
  lots?: NewLot[];
  prices?: NewPrice[];
  /** Outbox events, in the order their ids are drawn. */
  events?: NewEvent[];
  /**
   * The operation (`op_` id) of a multi-part write (a batch, a batch mint, a craft, a trade's
   * settlement): every event of the plan carries it (the envelope's `operationId`).
   */
  operationId?: string;
  ledgerChanges?: NewLedgerChange[];
  /**
   * Issue 37: audit entries of the write (a studio's mint or burn, a freeze, a metadata change),
   * appended to the audit trail last, in the same transaction: chained after the tip, which the store
   * locks by updating it (src/domain/audit.ts).
   */
  audit?: AuditDraft[];
}

/**
 * How a plan ended: applied (committed, reported to the commit hook); `replay` when its idempotency
 * key already holds an unexpired record (nothing applied; the record's columns as stored, for
 * Idempotency.replay); `rejected` when a guard failed (nothing applied).
 */
export type PlanOutcome =
  | { outcome: 'applied' }
  | { outcome: 'replay'; record: StoredRecord }
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

/**
 * Issue 36: the id of the lot a transfer makes in its receiver from the sender's lot `lotId` (when
 * the receiver has no lot of that end and source yet). Derived, not drawn, so both stores make the
 * same id: `lot_` and the first 26 hex digits (upper case) of MD5(transfer id, space, lot id), as
 * gats_apply_plan computes it.
 */
export function movedLotId(transferId: string, lotId: string): string {
  return `lot_${createHash('md5').update(`${transferId} ${lotId}`).digest('hex').slice(0, 26).toUpperCase()}`;
}

// Items that expire (issue 36). An NFT may carry an end time (`asset.expires_at`):
//
// - a timed grant (a season pass, a store's rental): minted with its end time by a studio's mint or
//   batch mint, or granted by a store offer (`expiresInSeconds`); it has no lender and is burned at
//   its end. Until then it moves as any NFT (a soulbound one never does);
// - a loan (a rental between wallets, `lend` below): the owner lends the NFT to another wallet until
//   a time; it moves to the borrower with `lender` set, the borrower cannot move, trade, list,
//   auction, craft or burn it, and at its end it returns to the lender.
//
// The rule "an expired item never moves" lives in the ledger store, not in the handlers: the
// `movable` and `burnable` guards, which every moving or burning write path carries (transfers,
// batches, trades, listings and their purchases, offers' acceptances, auctions, crafts, store
// purchases, loot box openings), fail with `expired` once the end time is at or before the plan's
// own time, whether or not the sweep has processed the item yet, and with `lent` while it is lent.
//
// The sweep (`expireDue`, run by every instance's market keeper, ./market-keeper.ts) reads the items
// due, oldest end first, in bounded batches, and expires up to ITEMS_PER_PLAN of them in one plan
// (several plans in flight): per item, guarded by `assetExpiry` (the end time and owner as read, and
// due at the plan's time), it moves the NFT from its holder to its lender (or to the zero address:
// burned), clears its end time and lender, ends its listings, and writes the `newTransfer` and
// `itemExpired` events under the item's own `op_` id (the event's `operationId`, ./store/plan.ts).
// Once applied the same plan is refused (the end time is cleared, the owner changed), so two
// instances racing over the same rows, or a pass that restarts after a crash mid-batch, expire each
// item exactly once. A store refuses a plan whole, so one refused item would refuse its batch: the
// sweep then reads the batch again and plans it again without the items no longer due (expired by
// another instance) and without the refused item unless it changed (moved or burnt meanwhile, it is
// planned as it is now); each retry removes or refreshes an item, so a batch never waits on one item
// forever. Nothing is leased: the guards decide.
//
// Timed currency grants (lots, `currency_lot`; docs/architecture/stores-and-rewards.md) are swept by
// the same call after the NFTs, the same way: the lots due, oldest end first, up to ITEMS_PER_PLAN in
// one plan, each burned whole (its remaining amount, which the store keeps within the balance less
// the reserved part) under the guard `lotAt` (the lot as read, due), with a `newTransfer` and an
// `itemExpired` (with `amount`) under the lot's own `op_` id; a burned lot is gone, so a second sweep
// of it is refused (`missing`) and the batch is read and planned again without it.

import type { Database } from '../../db/database.ts';
import { dialectOf } from '../../db/dialect.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { CurrencyLot } from '../../db/entities/CurrencyLot.ts';
import { Listing } from '../../db/entities/Listing.ts';
import { ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import type { AssetService } from './assets.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { ItemExpiredError, type Leg } from './legs.ts';
import { endListingsOf } from './listings.ts';
import { endTimeOf } from './mints.ts';
import { newTransferEvent } from './outbox.ts';
import type { GuardFailure, LedgerStore, NewEvent, Plan } from './store/plan.ts';
import { type AssetView, transferView } from './views.ts';

/** The longest loan: a year. */
export const MAX_LOAN_SECONDS = 365 * 24 * 3600;

/** Items one plan expires at most (the default; a test may ask for fewer). */
export const ITEMS_PER_PLAN = 50;
/**
 * How many plans of the sweep one call has in flight at once on PostgreSQL (each its own connection).
 * On SQLite one: plans in flight together commit as one synchronous piece of the one writer, which
 * the other traffic would wait behind (the expiry benchmark's p99 of transfers during the sweep).
 */
const IN_FLIGHT = 4;

/** An item due, as read. */
interface Due {
  id: string;
  owner: StoredAddress | null;
  expiresAt: Date;
  lender: StoredAddress | null;
  collectionId: string;
  /** It had an active listing when read (its expiry ends it). */
  listed: boolean;
}

/** A lot of timed units due, as read. */
interface DueLot {
  id: string;
  assetId: string;
  wallet: StoredAddress;
  amount: bigint;
  expiresAt: Date;
  collectionId: string;
  decimals: number;
}

/** The parts of a plan one item's (or lot's) expiry adds. */
type PlanParts = Pick<
  Plan,
  'guards' | 'balances' | 'supplies' | 'owners' | 'assetUpdates' | 'listingStatuses' | 'transfers' | 'events'
>;

const sameItem = (a: Due, b: Due | undefined) =>
  b !== undefined &&
  a.owner === b.owner &&
  a.lender === b.lender &&
  a.expiresAt.getTime() === b.expiresAt.getTime() &&
  a.listed === b.listed;

/** The items' parts as one plan's (each list in the items' order). */
function mergeParts(parts: Partial<PlanParts>[]): Omit<Plan, 'at'> {
  const plan: Record<string, unknown[]> = { guards: [] };
  for (const part of parts)
    for (const [name, list] of Object.entries(part))
      if (list?.length) plan[name] = [...(plan[name] ?? []), ...list];
  return plan as unknown as Omit<Plan, 'at'>;
}

export interface LendInput {
  from: StoredAddress;
  to: StoredAddress;
  /** RFC 3339, as the contract has it. */
  expiresAt: string;
}

export interface ExpiryService {
  /** Lends the NFT held by `from` to `to` until `expiresAt` (answered with the asset as lent). */
  lend(
    actor: Actor,
    assetId: string,
    input: LendInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<AssetView>>;
  /**
   * Expires up to `limit` items whose end time is at or before `now`, oldest end first, then burns up
   * to `limit` lots of timed currency units due (issue 36): returns how many items and lots this call
   * expired (one another instance expired first counts for that one).
   */
  expireDue(now: Date, limit: number): Promise<number>;
}

export function createExpiryService(
  { orm, reads }: Database,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter,
  assets: AssetService,
  perPlan = ITEMS_PER_PLAN,
): ExpiryService {
  // Concurrent writers (PostgreSQL) take plans in flight at once; one writer (SQLite) does not.
  const concurrentWriters = dialectOf(orm).idsMayCommitOutOfOrder;

  /** The parts of one item's expiry as read (merged with the batch's others into one plan). */
  function partsOf(item: Due, at: Date, listings: Partial<PlanParts>): Partial<PlanParts> {
    const holder = item.owner ?? ZERO_ADDRESS;
    const guard = {
      kind: 'assetExpiry' as const,
      assetId: item.id,
      expiresAt: item.expiresAt,
      owner: holder,
      due: true,
    };
    const clear = [{ assetId: item.id, expiresAt: null, lender: null }];
    // Burned before its end by its holder: nothing moves, the end time is cleared (no event).
    if (holder === ZERO_ADDRESS) return { guards: [guard], assetUpdates: clear };
    const to = item.lender ?? ZERO_ADDRESS;
    // Each item its own operation: its `newTransfer` and `itemExpired` share an id no other item has.
    const operationId = newId('op');
    const transferId = newId('tr');
    const view = transferView(
      {
        id: transferId,
        asset: { id: item.id },
        fromAddress: holder,
        toAddress: to,
        amount: 1n,
        status: 'completed',
        failureReason: null,
        createdAt: at,
        completedAt: at,
      },
      0,
    );
    const expired: NewEvent = {
      type: 'itemExpired',
      occurredAt: at,
      data: {
        assetId: item.id,
        collection: item.collectionId,
        holder: formatAddress(holder),
        to: formatAddress(to),
        outcome: to === ZERO_ADDRESS ? 'burned' : 'returned',
        expiresAt: item.expiresAt.toISOString(),
        transferId,
      },
      assetId: item.id,
      collectionId: item.collectionId,
      wallets: to === ZERO_ADDRESS ? [holder] : [holder, to],
      fromWallet: holder,
      toWallet: to === ZERO_ADDRESS ? null : to,
    };
    return {
      guards: [guard, { kind: 'holds', assetId: item.id, wallet: holder, atLeast: 1n }],
      balances: [
        { assetId: item.id, wallet: holder, delta: -1n },
        ...(to === ZERO_ADDRESS ? [] : [{ assetId: item.id, wallet: to, delta: 1n }]),
      ],
      owners: [{ assetId: item.id, owner: to }],
      assetUpdates: clear,
      listingStatuses: listings.listingStatuses,
      transfers: [
        {
          id: transferId,
          assetId: item.id,
          from: holder,
          to,
          amount: 1n,
          requestedBy: null,
          createdAt: at,
        },
      ],
      events: [newTransferEvent(view, item.collectionId, at), expired, ...(listings.events ?? [])].map(
        (event) => ({ ...event, operationId }),
      ),
    };
  }

  /**
   * The items due at `now`, oldest end first (by end time alone: the index on `expires_at` then
   * yields the first rows without sorting every item due, as 100,000 rentals ending at one instant
   * would), or, with `ids`, those of them still due; each with whether it has an active listing (a
   * second read for the batch, not one a item).
   */
  async function readDue(now: Date, limit: number, ids?: string[]): Promise<Due[]> {
    const em = orm.em.fork();
    const rows = await em.find(
      Asset,
      ids ? { id: { $in: ids }, expiresAt: { $lte: now } } : { expiresAt: { $lte: now } },
      {
        fields: ['id', 'owner', 'expiresAt', 'lender', 'collection'],
        orderBy: { expiresAt: 'asc' },
        limit,
      },
    );
    const listed = new Set(
      rows.length
        ? (
            await em.find(
              Listing,
              { assetId: { $in: rows.map((row) => row.id) }, status: 'active' },
              { fields: ['assetId'] },
            )
          ).map((l) => l.assetId)
        : [],
    );
    return rows.map((row) => ({
      id: row.id,
      owner: (row.owner ?? null) as StoredAddress | null,
      expiresAt: row.expiresAt as Date,
      lender: (row.lender ?? null) as StoredAddress | null,
      collectionId: row.collection.id,
      listed: listed.has(row.id),
    }));
  }

  /** The listings the items' expiry ends (read only for the items with an active listing). */
  async function listingsOf(items: Due[], at: Date): Promise<Map<string, Partial<PlanParts>>> {
    const parts = new Map<string, Partial<PlanParts>>();
    for (const item of items) {
      if (!item.listed || !item.owner || item.owner === ZERO_ADDRESS) continue;
      const reason = item.lender ? 'moved' : 'burned';
      parts.set(
        item.id,
        await endListingsOf(reads, writer.listingDecimals, [{ assetId: item.id, reason }], at),
      );
    }
    return parts;
  }

  /**
   * Expires the items as read in one plan; returns how many it expired. A refused plan (one item
   * expired by another instance, or changed since it was read) changed nothing: the batch is read
   * again, the items no longer due leave it, the refused item leaves it too unless it changed (then it
   * stays as it is now), and the rest is planned again. Each refusal removes or refreshes the refused
   * item, and an item due can change only by its expiry (every move or burn of it is refused), so the
   * loop ends; the refused item left out is found again by the next pass if it is still due.
   */
  async function expireBatch(items: Due[], now: Date): Promise<number> {
    let batch = items;
    while (batch.length > 0) {
      const at = new Date();
      const listings = await listingsOf(batch, at);
      const plan = mergeParts(batch.map((item) => partsOf(item, at, listings.get(item.id) ?? {})));
      const outcome = await store.apply({ ...plan, at });
      if (outcome.outcome === 'applied') return batch.length;
      if (outcome.outcome !== 'rejected') throw new Error(`Unexpected ${outcome.outcome} of an expiry.`);
      const refused = 'assetId' in outcome.guard ? outcome.guard.assetId : undefined;
      const before = new Map(batch.map((item) => [item.id, item]));
      const current = await readDue(
        now,
        batch.length,
        batch.map((item) => item.id),
      );
      batch = current.filter((item) => item.id !== refused || !sameItem(item, before.get(item.id)));
    }
    return 0;
  }
  /** The lots due at `now`, oldest end first, or, with `ids`, those of them still there. */
  async function readDueLots(now: Date, limit: number, ids?: string[]): Promise<DueLot[]> {
    const em = orm.em.fork();
    const rows = await em.find(
      CurrencyLot,
      ids ? { id: { $in: ids }, expiresAt: { $lte: now } } : { expiresAt: { $lte: now } },
      { orderBy: { expiresAt: 'asc' }, limit },
    );
    const currencies = new Map<string, { collectionId: string; decimals: number }>();
    const assetIds = [...new Set(rows.map((row) => row.assetId))];
    if (assetIds.length)
      for (const asset of await em.find(
        Asset,
        { id: { $in: assetIds } },
        { fields: ['id', 'decimals', 'collection'] },
      ))
        currencies.set(asset.id, { collectionId: asset.collection.id, decimals: asset.decimals ?? 0 });
    return rows.map((row) => ({
      id: row.id,
      assetId: row.assetId,
      wallet: row.wallet as StoredAddress,
      amount: row.amount as bigint,
      expiresAt: row.expiresAt as Date,
      collectionId: currencies.get(row.assetId)?.collectionId ?? '',
      decimals: currencies.get(row.assetId)?.decimals ?? 0,
    }));
  }

  /** The parts of one lot's burn (the store takes the units from that lot: the transfer's `lotId`). */
  function lotParts(lot: DueLot, at: Date): Partial<PlanParts> {
    const operationId = newId('op');
    const transferId = newId('tr');
    const view = transferView(
      {
        id: transferId,
        asset: { id: lot.assetId },
        fromAddress: lot.wallet,
        toAddress: ZERO_ADDRESS,
        amount: lot.amount,
        status: 'completed',
        failureReason: null,
        createdAt: at,
        completedAt: at,
      },
      lot.decimals,
    );
    const expired: NewEvent = {
      type: 'itemExpired',
      occurredAt: at,
      data: {
        assetId: lot.assetId,
        collection: lot.collectionId,
        holder: formatAddress(lot.wallet),
        to: formatAddress(ZERO_ADDRESS),
        outcome: 'burned',
        expiresAt: lot.expiresAt.toISOString(),
        transferId,
        amount: formatAmount(lot.amount, lot.decimals),
      },
      assetId: lot.assetId,
      collectionId: lot.collectionId,
      wallets: [lot.wallet],
      fromWallet: lot.wallet,
      toWallet: null,
    };
    return {
      guards: [
        { kind: 'lotAt', lotId: lot.id, assetId: lot.assetId, wallet: lot.wallet, amount: lot.amount },
      ],
      balances: [{ assetId: lot.assetId, wallet: lot.wallet, delta: -lot.amount }],
      supplies: [{ assetId: lot.assetId, delta: -lot.amount }],
      transfers: [
        {
          id: transferId,
          assetId: lot.assetId,
          from: lot.wallet,
          to: ZERO_ADDRESS,
          amount: lot.amount,
          requestedBy: null,
          createdAt: at,
          lotId: lot.id,
        },
      ],
      events: [newTransferEvent(view, lot.collectionId, at), expired].map((event) => ({
        ...event,
        operationId,
      })),
    };
  }

  /**
   * Burns the lots as read in one plan; returns how many it burned. A refused plan is read again:
   * the lots gone (burned by another instance) or no longer due leave it, the refused lot leaves it
   * unless its amount changed (then it stays as it is now), as `expireBatch` does for items.
   */
  async function expireLotBatch(lots: DueLot[], now: Date): Promise<number> {
    let batch = lots;
    while (batch.length > 0) {
      const at = new Date();
      const plan = mergeParts(batch.map((lot) => lotParts(lot, at)));
      const outcome = await store.apply({ ...plan, at });
      if (outcome.outcome === 'applied') return batch.length;
      if (outcome.outcome !== 'rejected') throw new Error(`Unexpected ${outcome.outcome} of a lot expiry.`);
      const refused = outcome.guard.kind === 'lotAt' ? outcome.guard.lotId : undefined;
      const before = new Map(batch.map((lot) => [lot.id, lot.amount]));
      const current = await readDueLots(
        now,
        batch.length,
        batch.map((lot) => lot.id),
      );
      batch = current.filter((lot) => lot.id !== refused || before.get(lot.id) !== lot.amount);
    }
    return 0;
  }

  /** Runs the batches of a pass: several plans in flight on PostgreSQL, one at a time on SQLite. */
  async function inBatches<T>(due: T[], expire: (batch: T[]) => Promise<number>): Promise<number> {
    const batches: T[][] = [];
    for (let i = 0; i < due.length; i += perPlan) batches.push(due.slice(i, i + perPlan));
    let expired = 0;
    const inFlight = concurrentWriters ? IN_FLIGHT : 1;
    for (let i = 0; i < batches.length; i += inFlight) {
      const done = await Promise.all(batches.slice(i, i + inFlight).map(expire));
      expired += done.reduce((n, d) => n + d, 0);
    }
    return expired;
  }

  return {
    async lend(actor, assetId, input, idempotencyKey) {
      const place = { pointer: '/body', label: '' };
      if (input.to === input.from || input.to === ZERO_ADDRESS)
        throw new ValidationError('An NFT is lent to another wallet than its lender.', [
          { pointer: '/body/to', detail: 'must differ from `from` and the zero address' },
        ]);
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'lendAsset',
        key: idempotencyKey,
        request: { assetId, ...input },
      });
      const at = new Date();
      let leg: Leg;
      let expiresAt: Date;
      let asset: AssetView;
      try {
        const facts = await writer.factsOf(assetId);
        if (facts.kind !== 'nft')
          throw new ValidationError('Only an NFT can be lent, not an amount of a currency.', [
            { pointer: '/path/asset_id', detail: 'must be an NFT' },
          ]);
        expiresAt = endTimeOf(input.expiresAt, at, '/body/expiresAt', MAX_LOAN_SECONDS);
        leg = { asset: facts, amount: 1n, from: input.from, to: input.to, place };
        asset = await assets.get(assetId);
      } catch (error) {
        const earlier = await writer.earlierAnswer<AssetView>(actor, [{ from: input.from, place }], key);
        if (earlier) return earlier;
        throw error;
      }
      const body: AssetView = {
        ...asset,
        owner: formatAddress(input.to),
        expiresAt: expiresAt.toISOString(),
        lender: formatAddress(input.from),
      };
      return writer.apply(actor, [leg], key, at, () => ({ status: 200, body, headers: {} }), {
        // Not lent and not a timed grant: one end time at a time.
        guards: [{ kind: 'assetExpiry', assetId, expiresAt: null }],
        assetUpdates: [{ assetId, expiresAt, lender: input.from }],
        rejected: (failure: GuardFailure) =>
          failure.guard.kind === 'assetExpiry'
            ? new ItemExpiredError(
                `${assetId} has an end time already (a timed grant or a loan): it cannot be lent.`,
              )
            : new Error(`Unexpected guard ${failure.guard.kind}.`),
      });
    },

    async expireDue(now, limit) {
      const items = await inBatches(await readDue(now, limit), (batch) => expireBatch(batch, now));
      // Issue 36: then the timed currency grants' lots, up to `limit` as well.
      const lots = await inBatches(await readDueLots(now, limit), (batch) => expireLotBatch(batch, now));
      return items + lots;
    },
  };
}

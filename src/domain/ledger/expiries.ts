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
// due, oldest end first, in bounded batches, and applies one plan per item: guarded by `assetExpiry`
// (the end time and owner as read, and due at the plan's time), it moves the NFT from its holder to
// its lender (or to the zero address: burned), clears its end time and lender, ends its listings,
// and writes the `newTransfer` and `itemExpired` events under one `op_` id. Once applied the same
// plan is refused (the end time is cleared, the owner changed), so two instances racing over the same
// rows, or a pass that restarts after a crash mid-batch, expire each item exactly once. Nothing is
// leased: the guard decides.
import { Asset } from '../../db/entities/Asset.ts';
import type { Orm } from '../../db/orm.ts';
import { readStatements } from '../../db/read-statements.ts';
import { ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { type AssetService, endTimeOf } from './assets.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { endListingsOf } from './listings.ts';
import { newTransferEvent } from './outbox.ts';
import type { GuardFailure, LedgerStore, NewEvent } from './store/plan.ts';
import { ItemExpiredError, type Leg, type LegWriter } from './transfers.ts';
import { type AssetView, transferView } from './views.ts';

/** The longest loan: a year. */
export const MAX_LOAN_SECONDS = 365 * 24 * 3600;

/** How many items' plans one batch of the sweep has in flight at once. */
const IN_FLIGHT = 16;

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
   * Expires up to `limit` items whose end time is at or before `now`, oldest end first: returns how
   * many this call expired (an item another instance expired first counts for that one).
   */
  expireDue(now: Date, limit: number): Promise<number>;
}

export function createExpiryService(
  orm: Orm,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter,
  assets: AssetService,
): ExpiryService {
  const reads = readStatements(orm);

  /** Expires one item as read; false when another sweep (or a change) got there first. */
  async function expire(item: {
    id: string;
    owner: StoredAddress | null;
    expiresAt: Date;
    lender: StoredAddress | null;
    collectionId: string;
  }): Promise<boolean> {
    const at = new Date();
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
    if (holder === ZERO_ADDRESS) {
      const outcome = await store.apply({ at, guards: [guard], assetUpdates: clear });
      return outcome.outcome === 'applied';
    }
    const to = item.lender ?? ZERO_ADDRESS;
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
    const ended = await endListingsOf(
      reads,
      writer.listingDecimals,
      [{ assetId: item.id, reason: to === ZERO_ADDRESS ? 'burned' : 'moved' }],
      at,
    );
    const outcome = await store.apply({
      at,
      guards: [guard, { kind: 'holds', assetId: item.id, wallet: holder, atLeast: 1n }],
      balances: [
        { assetId: item.id, wallet: holder, delta: -1n },
        ...(to === ZERO_ADDRESS ? [] : [{ assetId: item.id, wallet: to, delta: 1n }]),
      ],
      owners: [{ assetId: item.id, owner: to }],
      assetUpdates: clear,
      listingStatuses: ended.listingStatuses.length ? ended.listingStatuses : undefined,
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
      events: [newTransferEvent(view, item.collectionId, at), expired, ...ended.events],
      operationId,
    });
    return outcome.outcome === 'applied';
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
      const due = await orm.em.fork().find(
        Asset,
        { expiresAt: { $lte: now } },
        {
          fields: ['id', 'owner', 'expiresAt', 'lender', 'collection'],
          orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
          limit,
        },
      );
      let expired = 0;
      for (let i = 0; i < due.length; i += IN_FLIGHT) {
        const done = await Promise.all(
          due.slice(i, i + IN_FLIGHT).map((row) =>
            expire({
              id: row.id,
              owner: (row.owner ?? null) as StoredAddress | null,
              expiresAt: row.expiresAt as Date,
              lender: (row.lender ?? null) as StoredAddress | null,
              collectionId: row.collection.id,
            }),
          ),
        );
        expired += done.filter(Boolean).length;
      }
      return expired;
    },
  };
}

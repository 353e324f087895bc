// The leg writer: checked legs to one ledger plan each (shared by transfers, batches, burns, crafts,
// trades, purchases, openings and the market), with the reads they need (an asset's immutable facts,
// cached; the control of a wallet) and the answers that must come before a refused rule's.

import type { Database } from '../../db/database.ts';
import type { BurnPolicy } from '../../db/entities/Collection.ts';
import { auditDraft } from '../audit.ts';
import { burnsAsStudio } from '../authorization.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { assetNotFound } from './assets.ts';
import { AssetOnChainError, isChainAssetId } from './chain-assets.ts';
import type { Idempotency, IdempotencyKey, StoredResponse, WriteResult } from './idempotency.ts';
import {
  type AssetFacts,
  amountOf,
  BurnNotAllowedError,
  type ExtraParts,
  type Leg,
  type LegPlace,
  legGuards,
  legRefusal,
  notControlled,
  SINGLE,
  type TransferInput,
} from './legs.ts';
import { endListingsOf, type ListingRow } from './listings.ts';
import { newTransferEvent } from './outbox.ts';
import type { BalanceChange, LedgerStore, ReservedChange } from './store/plan.ts';
import { decimalsOf, type TransferView, transferView } from './views.ts';

/** More assets than any deployment has; past it the cache starts over (it only saves a read). */
const ASSET_FACTS_LIMIT = 100_000;

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

export function createLegWriter(
  { reads }: Database,
  idempotency: Idempotency,
  store: LedgerStore,
): LegWriter {
  // Kept for the life of the process: an asset's kind, decimals and collection are immutable.
  const assetFacts = new Map<string, AssetFacts>();

  async function factsOf(assetId: string): Promise<AssetFacts> {
    const known = assetFacts.get(assetId);
    if (known) return known;
    const [row] = await reads.all<AssetFactsRow>(ASSET_FACTS, [assetId]);
    if (!row) throw assetNotFound(assetId);
    // A chain asset moves on chain only (issue 20): never cached here, so every ledger move of it
    // (transfer, batch leg, burn) is refused.
    if (isChainAssetId(assetId)) throw new AssetOnChainError(assetId);
    const { kind } = row;
    const facts: AssetFacts = {
      id: assetId,
      kind,
      decimals: decimalsOf({ kind, decimals: row.decimals == null ? null : Number(row.decimals) }),
      collectionId: row.collection_id,
      collectionOwner: row.collection_owner,
      burnPolicy: row.burn_policy,
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
      const [controlled] = await reads.all<{ yes: number }>(CONTROLLED, [from, actor.userId]);
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
      lots: extra.lots,
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

const CONTROLLED = 'select 1 as yes from wallet where address = ? and user_id = ?';
const ASSET_FACTS =
  'select a.kind, a.decimals, a.collection_id, c.owner_id as collection_owner, c.burn_policy ' +
  'from asset a join collection c on c.id = a.collection_id where a.id = ?';
/** A row of ASSET_FACTS (decimals: a number on SQLite, possibly text from PostgreSQL's driver). */
interface AssetFactsRow {
  kind: AssetFacts['kind'];
  decimals: number | string | null;
  collection_id: string;
  collection_owner: string;
  burn_policy: BurnPolicy;
}

// The PostgreSQL ledger store: a plan is one call of the database function `gats_apply_plan`
// (src/db/functions/gats_apply_plan.sql, its one home), one round trip in its own transaction, as a
// named prepared statement on the ORM's pool. The plan travels as one JSON argument (`planJson`,
// whose keys test/unit/ledger/plan-wire.test.ts holds equal to those the function reads); the function
// takes the idempotency record, locks what the plan names in a fixed order (the orders are computed
// here), checks the guards in order and applies the rows. A lost deadlock, a serialization failure
// or a concurrent insert of the same key rolled everything back: the plan is simply run again, and
// its guards then see the winner.
import type { Orm } from '../../../db/orm.ts';
import { storedAnswer, storedRecordOf } from '../../../db/stored-answer.ts';
import { isTransient, retrying } from '../../../db/transactions.ts';
import { pgStatements } from '../../../db/write-statements.ts';
import type { CommitHook } from '../../../events/commit-hook.ts';
import { OUTBOX_LOCK_KEY } from '../../../events/outbox-lock.ts';
import { listingTraitsOf } from './listing-traits.ts';
import {
  type Guard,
  type GuardFailure,
  type GuardReason,
  type LedgerStore,
  NegativeBalanceError,
  type Plan,
  type PlanOutcome,
} from './plan.ts';

const APPLY_PLAN = 'select gats_apply_plan($1::jsonb, $2) as existing';

const text = (value: bigint | null) => (value === null ? null : value.toString());

function guardJson(guard: Guard): Record<string, unknown> {
  switch (guard.kind) {
    case 'controls':
      return { k: 'controls', u: guard.userId, w: guard.wallet };
    case 'holds':
      return {
        k: 'holds',
        a: guard.assetId,
        w: guard.wallet,
        n: text(guard.atLeast),
        ...(guard.untimed && { untimed: true }),
      };
    case 'supplyWithin':
      return { k: 'supply', a: guard.assetId, n: text(guard.adding), max: text(guard.max) };
    case 'assetAbsent':
      return { k: 'asset_absent', a: guard.assetId };
    case 'walletAbsent':
      return { k: 'wallet_absent', w: guard.wallet };
    case 'movable':
      return { k: 'movable', a: guard.assetId };
    case 'burnable':
      return { k: 'burnable', a: guard.assetId };
    case 'tradeOpen':
      return { k: 'trade_open', t: guard.tradeId, at: guard.at.toISOString() };
    case 'listingActive':
      return { k: 'listing_active', l: guard.listingId, ...(guard.at && { at: guard.at.toISOString() }) };
    case 'offerOpen':
      return { k: 'offer_open', o: guard.offerId, ...(guard.at && { at: guard.at.toISOString() }) };
    case 'auctionOpen':
      return {
        k: 'auction_open',
        au: guard.auctionId,
        at: guard.at.toISOString(),
        ...(guard.ended && { ended: true }),
        ...(guard.bestBid !== undefined && { best: text(guard.bestBid) }),
      };
    case 'reservedAtLeast':
      return { k: 'reserved', a: guard.assetId, w: guard.wallet, n: text(guard.atLeast) };
    case 'assetVersion':
      return {
        k: 'asset_version',
        a: guard.assetId,
        v: guard.version,
        ...(guard.frozen !== undefined && { f: guard.frozen }),
        ...(guard.owner !== undefined && { o: guard.owner }),
      };
    // ---- Stores (issue 36) ----
    case 'offerAvailable':
      return {
        k: 'offer_available',
        o: guard.offerId,
        v: guard.version,
        w: guard.wallet,
        q: guard.quantity,
        at: guard.at.toISOString(),
      };
    // ---- Loot boxes and draws (issue 36) ----
    case 'seedAt':
      return { k: 'seed_at', s: guard.seedId, w: guard.wallet, n: guard.nonce };
    case 'pityAt':
      return { k: 'pity_at', b: guard.boxId, w: guard.wallet, n: guard.count };
    // ---- Items that expire (issue 36) ----
    case 'assetExpiry':
      return {
        k: 'asset_expiry',
        a: guard.assetId,
        x: guard.expiresAt?.toISOString() ?? null,
        ...(guard.owner !== undefined && { o: guard.owner }),
        ...(guard.due && { due: true }),
      };
    // ---- Timed currency grants (issue 36) ----
    case 'lotAt':
      return { k: 'lot_at', l: guard.lotId, a: guard.assetId, w: guard.wallet, n: text(guard.amount) };
  }
}

const REASONS = new Set<string>([
  'missing',
  'frozen',
  'soulbound',
  'accepted',
  'cancelled',
  'expired',
  'sold',
  'ended',
  // ---- Stores (issue 36) ----
  'closed',
  'version',
  'notStarted',
  'soldOut',
  'walletLimit',
  // ---- Loot boxes and draws (issue 36) ----
  'revealed',
  'nonce',
  'pity',
  'unsold',
  'changed',
  'open',
  // ---- Items that expire (issue 36) ----
  'lent',
]);
const isReason = (hint: string): hint is GuardReason => REASONS.has(hint);

/** The failure the function reported: HINT is the amount found, or the reason (a word). */
function failure(guard: Guard, hint: string | undefined): GuardFailure {
  if (!hint) return { guard };
  return isReason(hint) ? { guard, reason: hint } : { guard, found: BigInt(hint) };
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The function's argument: only the parts the plan has (the function skips absent ones cheaply). */
export function planJson(plan: Plan): string {
  const p: Record<string, unknown> = { at: plan.at.toISOString() };
  if (plan.idempotency) {
    const { key, response } = plan.idempotency;
    // A large answer travels deflated, base64 (`z`); the function stores it in response_deflated.
    const answer = storedAnswer(response.body);
    p.record = {
      id: key.id,
      hash: key.requestHash,
      status: response.status,
      ...(answer.deflated ? { z: answer.deflated.toString('base64') } : { body: response.body }),
      headers: response.headers,
      expires: key.expiresAt(plan.at).toISOString(),
    };
  }
  // What is locked, each kind in one fixed order: the same rows in the same order for every plan.
  const holdings = new Map<string, { a: string; w: string }>();
  const supplies = new Set<string>();
  const updated = new Set<string>();
  for (const guard of plan.guards) {
    if (guard.kind === 'holds' || guard.kind === 'reservedAtLeast' || guard.kind === 'lotAt')
      holdings.set(`${guard.assetId} ${guard.wallet}`, { a: guard.assetId, w: guard.wallet });
    if (guard.kind === 'supplyWithin') supplies.add(guard.assetId);
    if (guard.kind === 'assetVersion') updated.add(guard.assetId);
    // Issue 36: the expiry sweep's and a loan's guard lock the asset as an update does.
    if (guard.kind === 'assetExpiry') updated.add(guard.assetId);
  }
  for (const update of plan.assetUpdates ?? []) updated.add(update.assetId);
  if (updated.size) p.asset_locks = [...updated].sort(byText);
  for (const change of plan.balances ?? [])
    holdings.set(`${change.assetId} ${change.wallet}`, { a: change.assetId, w: change.wallet });
  for (const change of plan.reserves ?? [])
    holdings.set(`${change.assetId} ${change.wallet}`, { a: change.assetId, w: change.wallet });
  for (const change of plan.supplies ?? []) supplies.add(change.assetId);
  if (supplies.size) p.supply_locks = [...supplies].sort(byText);
  if (holdings.size)
    p.locks = [...holdings.entries()].sort(([a], [b]) => byText(a, b)).map(([, lock]) => lock);
  if (plan.guards.length) p.guards = plan.guards.map(guardJson);
  if (plan.assets?.length)
    p.assets = plan.assets.map((a) => ({
      id: a.id,
      kind: a.kind,
      name: a.name,
      description: a.description,
      metadata: a.metadata,
      collection: a.collectionId,
      creator: a.creatorId,
      symbol: a.symbol,
      decimals: a.decimals,
      total_supply: text(a.totalSupply),
      max_supply: text(a.maxSupply),
      owner: a.owner,
      ...(a.soulbound && { soulbound: true }),
      created_at: a.createdAt.toISOString(),
      // Issue 36: items that expire.
      ...(a.expiresAt && { expires_at: a.expiresAt.toISOString() }),
      ...(a.lender && { lender: a.lender }),
      // Issue 37: a ledger NFT's mint.
      ...(a.mintedTo && { minted_to: a.mintedTo }),
    }));
  if (plan.wallets?.length)
    p.wallets = plan.wallets.map((w) => ({
      address: w.address,
      user_id: w.userId,
      kind: w.kind,
      key: w.encryptedPrivateKey,
      created_at: w.createdAt.toISOString(),
    }));
  if (plan.balances?.length)
    p.balances = plan.balances.map((b) => ({ a: b.assetId, w: b.wallet, d: text(b.delta) }));
  if (plan.supplies?.length) p.supplies = plan.supplies.map((s) => ({ a: s.assetId, d: text(s.delta) }));
  if (plan.owners?.length) p.owners = plan.owners.map((o) => ({ a: o.assetId, o: o.owner }));
  if (plan.assetUpdates?.length)
    p.asset_updates = plan.assetUpdates.map((u) => ({
      a: u.assetId,
      // Absent keys leave the column as it is; `description` may be set to null (key present).
      ...(u.name !== undefined && { name: u.name }),
      ...(u.description !== undefined && { description: u.description }),
      ...(u.metadata !== undefined && { metadata: u.metadata, traits: listingTraitsOf(u.metadata) }),
      ...(u.frozen !== undefined && { frozen: u.frozen, frozen_by: u.frozenBy ?? null }),
      ...(u.soulbound !== undefined && { soulbound: u.soulbound }),
      ...(u.metadataVersion !== undefined && { version: u.metadataVersion }),
      // Issue 36: a loan sets both, a return clears both.
      ...(u.expiresAt !== undefined && {
        expires_at: u.expiresAt?.toISOString() ?? null,
        lender: u.lender ?? null,
      }),
    }));
  if (plan.metadataVersions?.length)
    p.metadata_versions = plan.metadataVersions.map((v) => ({
      a: v.assetId,
      v: v.version,
      name: v.name,
      metadata: v.metadata,
      u: v.changedBy,
      at: v.changedAt.toISOString(),
    }));
  if (plan.trades?.length)
    p.trades = plan.trades.map((t) => ({
      id: t.id,
      status: t.status,
      u: t.proposerUserId,
      pw: t.proposerWallet,
      cw: t.counterpartyWallet,
      offer: t.offer,
      request: t.request,
      expires_at: t.expiresAt.toISOString(),
      created_at: t.createdAt.toISOString(),
      updated_at: t.updatedAt.toISOString(),
      op: t.operationId,
      by: t.closedBy,
    }));
  if (plan.tradeStatuses?.length)
    p.trade_statuses = plan.tradeStatuses.map((c) => ({
      t: c.tradeId,
      status: c.status,
      by: c.by,
      op: c.operationId,
      at: c.at.toISOString(),
    }));
  if (plan.listings?.length)
    p.listings = plan.listings.map((l) => ({
      id: l.id,
      u: l.sellerUserId,
      w: l.sellerWallet,
      a: l.assetId,
      c: l.collectionId,
      n: text(l.amount),
      cur: l.currencyId,
      price: text(l.price),
      expires_at: l.expiresAt?.toISOString() ?? null,
      at: l.createdAt.toISOString(),
      traits: listingTraitsOf(l.metadata),
    }));
  if (plan.listingStatuses?.length)
    p.listing_statuses = plan.listingStatuses.map((c) => ({
      l: c.listingId,
      status: c.status,
      reason: c.reason,
      by: c.by,
      op: c.operationId,
      at: c.at.toISOString(),
    }));
  if (plan.sales?.length)
    p.sales = plan.sales.map((x) => ({
      id: x.id,
      l: x.listingId,
      a: x.assetId,
      c: x.collectionId,
      n: text(x.amount),
      cur: x.currencyId,
      price: text(x.price),
      royalty: text(x.royalty),
      fee: text(x.fee),
      proceeds: text(x.sellerProceeds),
      sw: x.sellerWallet,
      bw: x.buyerWallet,
      at: x.createdAt.toISOString(),
    }));
  // Issue 35: offers and reserved balances.
  if (plan.reserves?.length)
    p.reserves = plan.reserves.map((r) => ({ a: r.assetId, w: r.wallet, d: text(r.delta) }));
  if (plan.offers?.length)
    p.offers = plan.offers.map((o) => ({
      id: o.id,
      u: o.bidderUserId,
      w: o.bidderWallet,
      a: o.assetId,
      c: o.collectionId,
      tt: o.trait?.type ?? null,
      tv: o.trait?.value ?? null,
      cur: o.currencyId,
      price: text(o.price),
      expires_at: o.expiresAt?.toISOString() ?? null,
      at: o.createdAt.toISOString(),
    }));
  if (plan.offerStatuses?.length)
    p.offer_statuses = plan.offerStatuses.map((c) => ({
      o: c.offerId,
      status: c.status,
      by: c.by,
      op: c.operationId,
      sold: c.soldAssetId,
      at: c.at.toISOString(),
    }));
  // ---- Stores (issue 36) ----
  if (plan.offerSales?.length)
    p.offer_sales = plan.offerSales.map((x) => ({ o: x.offerId, w: x.wallet, q: x.quantity }));
  if (plan.storePurchases?.length)
    p.store_purchases = plan.storePurchases.map((x) => ({
      id: x.id,
      o: x.offerId,
      v: x.version,
      c: x.collectionId,
      w: x.wallet,
      u: x.userId,
      q: x.quantity,
      paid: x.paid,
      pay_to: x.payTo,
      granted: x.granted,
      at: x.createdAt.toISOString(),
    }));
  // ---- Loot boxes and draws (issue 36) ----
  if (plan.seedNonces?.length) p.seed_nonces = plan.seedNonces.map((x) => ({ s: x.seedId, n: x.next }));
  if (plan.pityCounts?.length)
    p.pity_counts = plan.pityCounts.map((x) => ({ b: x.boxId, w: x.wallet, n: x.count }));
  if (plan.draws?.length)
    p.draws = plan.draws.map((d) => ({
      id: d.id,
      b: d.boxId,
      a: d.assetId,
      w: d.wallet,
      s: d.seedId,
      n: d.nonce,
      data: d.data,
      at: d.createdAt.toISOString(),
    }));
  if (plan.auctions?.length)
    p.auctions = plan.auctions.map((a) => ({
      id: a.id,
      u: a.sellerUserId,
      w: a.sellerWallet,
      a: a.assetId,
      c: a.collectionId,
      cur: a.currencyId,
      reserve: text(a.reservePrice),
      step: text(a.minIncrement),
      ends_at: a.endsAt.toISOString(),
      ext: a.extensionSeconds,
      at: a.createdAt.toISOString(),
    }));
  if (plan.auctionBids?.length)
    p.auction_bids = plan.auctionBids.map((b) => ({
      au: b.auctionId,
      n: text(b.amount),
      w: b.bidder,
      u: b.bidderUserId,
      ends_at: b.endsAt.toISOString(),
      at: b.at.toISOString(),
    }));
  if (plan.auctionStatuses?.length)
    p.auction_statuses = plan.auctionStatuses.map((c) => ({
      au: c.auctionId,
      status: c.status,
      op: c.operationId,
      at: c.at.toISOString(),
    }));
  if (plan.transfers?.length)
    p.transfers = plan.transfers.map((t) => ({
      id: t.id,
      a: t.assetId,
      f: t.from,
      t: t.to,
      n: text(t.amount),
      u: t.requestedBy,
      at: t.createdAt.toISOString(),
      ...(t.lotId !== undefined && { lot: t.lotId }),
    }));
  // Issue 36: timed currency grants.
  if (plan.lots?.length)
    p.lots = plan.lots.map((l) => ({
      id: l.id,
      a: l.assetId,
      w: l.wallet,
      n: text(l.amount),
      x: l.expiresAt.toISOString(),
      src: l.sourceId,
    }));
  if (plan.prices?.length)
    p.prices = plan.prices.map((x) => ({
      a: x.assetId,
      price: x.price,
      scaled: text(x.priceScaled),
      currency: x.currency,
      source: x.source,
      observed_at: x.observedAt.toISOString(),
      u: x.postedBy,
      created_at: x.createdAt.toISOString(),
    }));
  if (plan.operationId) p.op = plan.operationId;
  if (plan.events?.length)
    p.events = plan.events.map((e) => ({
      type: e.type,
      occurred_at: e.occurredAt.toISOString(),
      data: e.data,
      a: e.assetId,
      c: e.collectionId ?? null,
      wallets: e.wallets,
      f: e.fromWallet ?? null,
      t: e.toWallet ?? null,
      ...(e.onlyIfListingClosed !== undefined && { lc: e.onlyIfListingClosed }),
      ...(e.operationId !== undefined && { op: e.operationId }),
    }));
  if (plan.ledgerChanges?.length)
    p.changes = plan.ledgerChanges.map((c) => ({
      kind: c.kind,
      occurred_at: c.occurredAt.toISOString(),
      u: c.userId,
      w: c.wallet,
    }));
  // Issue 37: hashed and chained by the function, as `recordAudit` does (src/domain/audit.ts).
  if (plan.audit?.length)
    p.audit = plan.audit.map((d) => ({
      at: d.at.toISOString(),
      action: d.action,
      actor: d.actorId,
      ot: d.objectType,
      oi: d.objectId,
      owner: d.ownerId,
      c: d.collectionId,
      body: d.body,
    }));
  return JSON.stringify(p);
}

export function createPostgresLedgerStore(orm: Orm, hook: CommitHook): LedgerStore {
  const statements = pgStatements(orm);
  return {
    async apply(plan) {
      const argument = planJson(plan);
      return retrying(
        async (): Promise<PlanOutcome> => {
          try {
            const [row] = await statements.all('apply_plan', APPLY_PLAN, [argument, OUTBOX_LOCK_KEY]);
            if (row.existing != null)
              return { outcome: 'replay', record: storedRecordOf(row.existing as Record<string, unknown>) };
            hook.committed([...(plan.events ?? []), ...(plan.ledgerChanges ?? [])]);
            return { outcome: 'applied' };
          } catch (error) {
            const { code, detail, hint } = error as { code?: unknown; detail?: string; hint?: string };
            if (code === 'GTG01') {
              return { outcome: 'rejected', ...failure(plan.guards[Number(detail)], hint) };
            }
            if (code === 'GTN01') {
              const [assetId, wallet] = String(detail).split(' ');
              throw new NegativeBalanceError(assetId, wallet);
            }
            throw error;
          }
        },
        // Nothing was written: a lost deadlock, or a concurrent insert of the same key or row.
        (error) => isTransient(error) || (error as { code?: unknown }).code === '23505',
      );
    },
  };
}

// The PostgreSQL ledger store: a plan is one call of the database function `gats_apply_plan`
// (src/db/functions/gats_apply_plan.sql, its one home), one round trip in its own transaction, as a
// named prepared statement on the ORM's pool. The plan travels as one JSON argument (`planJson`,
// whose keys test/unit/ledger/plan-wire.test.ts holds equal to those the function reads); the function
// takes the idempotency record, locks what the plan names in a fixed order (the orders are computed
// here), checks the guards in order and applies the rows. A lost deadlock, a serialization failure
// or a concurrent insert of the same key rolled everything back: the plan is simply run again, and
// its guards then see the winner.
import type { Orm } from '../../../db/orm.ts';
import type { Row } from '../../../db/read-statements.ts';
import { pgStatements } from '../../../db/write-statements.ts';
import { commitHookOf } from '../../../events/commit-hook.ts';
import { OUTBOX_LOCK_KEY } from '../../../events/outbox-lock.ts';
import { isTransient } from '../transactions.ts';
import {
  type Guard,
  type GuardFailure,
  type GuardReason,
  type LedgerStore,
  NegativeBalanceError,
  type Plan,
} from './plan.ts';

const APPLY_PLAN = 'select gats_apply_plan($1::jsonb, $2) as existing';
const ATTEMPTS = 5;

const text = (value: bigint | null) => (value === null ? null : value.toString());

function guardJson(guard: Guard): Record<string, unknown> {
  switch (guard.kind) {
    case 'controls':
      return { k: 'controls', u: guard.userId, w: guard.wallet };
    case 'holds':
      return { k: 'holds', a: guard.assetId, w: guard.wallet, n: text(guard.atLeast) };
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
    case 'assetVersion':
      return {
        k: 'asset_version',
        a: guard.assetId,
        v: guard.version,
        ...(guard.frozen !== undefined && { f: guard.frozen }),
        ...(guard.owner !== undefined && { o: guard.owner }),
      };
  }
}

const REASONS = new Set<string>(['missing', 'frozen', 'soulbound', 'accepted', 'cancelled', 'expired']);
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
    p.record = {
      id: key.id,
      hash: key.requestHash,
      status: response.status,
      body: response.body,
      headers: response.headers,
      expires: key.expiresAt(plan.at).toISOString(),
    };
  }
  // What is locked, each kind in one fixed order: the same rows in the same order for every plan.
  const holdings = new Map<string, { a: string; w: string }>();
  const supplies = new Set<string>();
  const updated = new Set<string>();
  for (const guard of plan.guards) {
    if (guard.kind === 'holds')
      holdings.set(`${guard.assetId} ${guard.wallet}`, { a: guard.assetId, w: guard.wallet });
    if (guard.kind === 'supplyWithin') supplies.add(guard.assetId);
    if (guard.kind === 'assetVersion') updated.add(guard.assetId);
  }
  for (const update of plan.assetUpdates ?? []) updated.add(update.assetId);
  if (updated.size) p.asset_locks = [...updated].sort(byText);
  for (const change of plan.balances ?? [])
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
      ...(u.metadata !== undefined && { metadata: u.metadata }),
      ...(u.frozen !== undefined && { frozen: u.frozen, frozen_by: u.frozenBy ?? null }),
      ...(u.soulbound !== undefined && { soulbound: u.soulbound }),
      ...(u.metadataVersion !== undefined && { version: u.metadataVersion }),
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
  if (plan.transfers?.length)
    p.transfers = plan.transfers.map((t) => ({
      id: t.id,
      a: t.assetId,
      f: t.from,
      t: t.to,
      n: text(t.amount),
      u: t.requestedBy,
      at: t.createdAt.toISOString(),
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
    }));
  if (plan.ledgerChanges?.length)
    p.changes = plan.ledgerChanges.map((c) => ({
      kind: c.kind,
      occurred_at: c.occurredAt.toISOString(),
      u: c.userId,
      w: c.wallet,
    }));
  return JSON.stringify(p);
}

export function createPostgresLedgerStore(orm: Orm): LedgerStore {
  const statements = pgStatements(orm);
  const hook = commitHookOf(orm);
  return {
    async apply(plan) {
      const argument = planJson(plan);
      for (let attempt = 1; ; attempt++) {
        try {
          const [row] = await statements.all('apply_plan', APPLY_PLAN, [argument, OUTBOX_LOCK_KEY]);
          if (row.existing != null) return { outcome: 'replay', record: row.existing as Row };
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
          // Nothing was written: a lost deadlock, or a concurrent insert of the same key or row.
          if (attempt >= ATTEMPTS || !(isTransient(error) || code === '23505')) throw error;
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
        }
      }
    },
  };
}

// The SQLite ledger store: a plan is one piece of work of the group-commit writer
// (../../../db/write-statements.ts, `sqliteWriter`): prepared statements run synchronously, no
// `await` between BEGIN and COMMIT, so nothing else in the process runs between a guard's read and
// the writes that rely on it. Pieces asked for in one turn of the event loop commit together, each in
// its own savepoint; a rejected plan rolls back to its savepoint and changes nothing.
//
// Amounts are stored as the ORM's uint256 type stores them on SQLite (zero-padded text, so they
// compare and sort as numbers), dates as epoch milliseconds, JSON as text.
import type { Orm } from '../../../db/orm.ts';
import type { Row } from '../../../db/read-statements.ts';
import { sqliteSequence } from '../../../db/sequences.ts';
import { Uint256Type } from '../../../db/types/uint256.ts';
import { sqliteWriter } from '../../../db/write-statements.ts';
import type { Change } from '../../../events/change-keys.ts';
import { commitHookOf } from '../../../events/commit-hook.ts';
import { amountOf } from '../asset-rows.ts';
import {
  type GuardFailure,
  type LedgerStore,
  NegativeBalanceError,
  type Plan,
  type PlanOutcome,
} from './plan.ts';

/** Thrown inside the work to roll its savepoint back; caught in `apply`. */
class Rejected {
  readonly failure: GuardFailure;
  constructor(failure: GuardFailure) {
    this.failure = failure;
  }
}

/** Thrown inside the work when the key holds an unexpired record (nothing was written). */
class Replay {
  readonly record: Row;
  constructor(record: Row) {
    this.record = record;
  }
}

const SQL = {
  readRecord:
    'select request_hash, status, response_body, response_headers, expires_at from idempotency_record where id = ?',
  deleteExpired: 'delete from idempotency_record where id = ? and expires_at <= ?',
  insertRecord:
    'insert into idempotency_record (id, request_hash, status, response_body, response_headers, created_at, expires_at) ' +
    'values (?, ?, ?, ?, ?, ?, ?)',
  controls: 'select 1 as yes from wallet where address = ? and user_id = ?',
  balance: 'select balance from holding where asset_id = ? and wallet = ?',
  supply: 'select total_supply from asset where id = ?',
  assetExists: 'select 1 as yes from asset where id = ?',
  walletExists: 'select 1 as yes from wallet where address = ?',
  writeBalance:
    'insert into holding (wallet, asset_id, balance, updated_at) values (?, ?, ?, ?) ' +
    'on conflict (wallet, asset_id) do update set balance = excluded.balance, updated_at = excluded.updated_at',
  writeSupply: 'update asset set total_supply = ? where id = ?',
  setOwner: 'update asset set owner = ? where id = ?',
  insertAsset:
    'insert into asset (id, seq, kind, name, description, metadata, collection_id, creator_id, symbol, decimals, ' +
    'total_supply, max_supply, owner, soulbound, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  insertWallet:
    'insert into wallet (address, user_id, kind, encrypted_private_key, created_at) values (?, ?, ?, ?, ?)',
  insertTransfer:
    'insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, failure_reason, ' +
    "requested_by_id, created_at, completed_at) values (?, ?, ?, ?, ?, ?, 'completed', null, ?, ?, ?)",
  insertPrice:
    'insert into price_observation (asset_id, price, price_scaled, currency, source, observed_at, posted_by_id, created_at) ' +
    'values (?, ?, ?, ?, ?, ?, ?, ?)',
  insertEvent:
    'insert into outbox_event (type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet, ' +
    'operation_id) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  insertLedgerChange: 'insert into ledger_change (kind, occurred_at, user_id, wallet) values (?, ?, ?, ?)',
  movable:
    'select a.frozen, a.soulbound, c.soulbound as collection_soulbound from asset a ' +
    'join collection c on c.id = a.collection_id where a.id = ?',
  assetVersion: 'select metadata_version, frozen, owner from asset where id = ?',
  tradeOpen: 'select status, expires_at from trade where id = ?',
  setName: 'update asset set name = ? where id = ?',
  setDescription: 'update asset set description = ? where id = ?',
  setMetadata: 'update asset set metadata = ? where id = ?',
  setFrozen: 'update asset set frozen = ?, frozen_by = ? where id = ?',
  setSoulbound: 'update asset set soulbound = ? where id = ?',
  setMetadataVersion: 'update asset set metadata_version = ? where id = ?',
  insertMetadataVersion:
    'insert into asset_metadata_version (asset_id, version, name, metadata, changed_by, changed_at) values (?, ?, ?, ?, ?, ?)',
  insertTrade:
    'insert into trade (id, status, proposer_user_id, proposer_wallet, counterparty_wallet, offer, request, ' +
    'expires_at, created_at, updated_at, operation_id, closed_by) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  closeTrade: 'update trade set status = ?, closed_by = ?, operation_id = ?, updated_at = ? where id = ?',
} as const;

function epochMs(value: unknown): number {
  return typeof value === 'number' ? value : new Date(String(value)).getTime();
}

export function createSqliteLedgerStore(orm: Orm): LedgerStore {
  const platform = orm.em.getPlatform();
  const uint256 = new Uint256Type();
  const amount = (value: bigint | null) =>
    value === null ? null : uint256.convertToDatabaseValue(value, platform);
  const hook = commitHookOf(orm);

  const prepared = sqliteWriter<Change>(orm, (changes) => hook.committed(changes)).then((writer) => {
    const s = Object.fromEntries(
      Object.entries(SQL).map(([name, sql]) => [name, writer.statement(sql)]),
    ) as Record<keyof typeof SQL, ReturnType<typeof writer.statement>>;
    const sequence = sqliteSequence(writer);

    /** Balances read or written by the running plan, so a second leg on a holding sees the first. */
    function balanceOf(balances: Map<string, bigint>, assetId: string, wallet: string): bigint {
      const key = `${assetId}\u0000${wallet}`;
      let balance = balances.get(key);
      if (balance === undefined) {
        const row = s.balance.get(assetId, wallet);
        balance = row ? amountOf(row.balance) : 0n;
        balances.set(key, balance);
      }
      return balance;
    }

    function check(plan: Plan): void {
      for (const guard of plan.guards) {
        switch (guard.kind) {
          case 'controls':
            if (!s.controls.get(guard.wallet, guard.userId)) throw new Rejected({ guard });
            break;
          case 'holds': {
            const row = s.balance.get(guard.assetId, guard.wallet);
            const found = row ? amountOf(row.balance) : 0n;
            if (found < guard.atLeast) throw new Rejected({ guard, found });
            break;
          }
          case 'supplyWithin': {
            const row = s.supply.get(guard.assetId);
            const found = row?.total_supply == null ? 0n : amountOf(row.total_supply);
            if (found + guard.adding > guard.max) throw new Rejected({ guard, found });
            break;
          }
          case 'assetAbsent':
            if (s.assetExists.get(guard.assetId)) throw new Rejected({ guard });
            break;
          case 'walletAbsent':
            if (s.walletExists.get(guard.wallet)) throw new Rejected({ guard });
            break;
          case 'movable':
          case 'burnable': {
            const row = s.movable.get(guard.assetId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            // Soulbound first: unfreezing would not make it movable.
            if (guard.kind === 'movable' && (row.soulbound || row.collection_soulbound))
              throw new Rejected({ guard, reason: 'soulbound' });
            if (row.frozen) throw new Rejected({ guard, reason: 'frozen' });
            break;
          }
          case 'tradeOpen': {
            const row = s.tradeOpen.get(guard.tradeId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            if (row.status === 'accepted' || row.status === 'cancelled')
              throw new Rejected({ guard, reason: row.status });
            if (epochMs(row.expires_at) <= guard.at.getTime())
              throw new Rejected({ guard, reason: 'expired' });
            break;
          }
          case 'assetVersion': {
            const row = s.assetVersion.get(guard.assetId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            const found = BigInt(Number(row.metadata_version));
            const moved =
              (guard.frozen !== undefined && Boolean(row.frozen) !== guard.frozen) ||
              (guard.owner !== undefined && (row.owner ?? null) !== guard.owner);
            if (found !== BigInt(guard.version) || moved) throw new Rejected({ guard, found });
            break;
          }
        }
      }
    }

    function applyChanges(plan: Plan): void {
      for (const a of plan.assets ?? []) {
        s.insertAsset.run(
          a.id,
          sequence('asset'),
          a.kind,
          a.name,
          a.description,
          JSON.stringify(a.metadata),
          a.collectionId,
          a.creatorId,
          a.symbol,
          a.decimals,
          amount(a.totalSupply),
          amount(a.maxSupply),
          a.owner,
          a.soulbound ? 1 : 0,
          a.createdAt.getTime(),
        );
      }
      for (const w of plan.wallets ?? []) {
        s.insertWallet.run(w.address, w.userId, w.kind, w.encryptedPrivateKey, w.createdAt.getTime());
      }
      if (plan.balances?.length) {
        const now = plan.at.getTime();
        const balances = new Map<string, bigint>();
        for (const change of plan.balances) {
          const balance = balanceOf(balances, change.assetId, change.wallet) + change.delta;
          if (balance < 0n) throw new NegativeBalanceError(change.assetId, change.wallet);
          balances.set(`${change.assetId}\u0000${change.wallet}`, balance);
          s.writeBalance.run(change.wallet, change.assetId, amount(balance), now);
        }
      }
      for (const change of plan.supplies ?? []) {
        const row = s.supply.get(change.assetId);
        const supply = (row?.total_supply == null ? 0n : amountOf(row.total_supply)) + change.delta;
        s.writeSupply.run(amount(supply), change.assetId);
      }
      for (const change of plan.owners ?? []) s.setOwner.run(change.owner, change.assetId);
      for (const u of plan.assetUpdates ?? []) {
        if (u.name !== undefined) s.setName.run(u.name, u.assetId);
        if (u.description !== undefined) s.setDescription.run(u.description, u.assetId);
        if (u.metadata !== undefined) s.setMetadata.run(JSON.stringify(u.metadata), u.assetId);
        if (u.frozen !== undefined) s.setFrozen.run(u.frozen ? 1 : 0, u.frozenBy ?? null, u.assetId);
        if (u.soulbound !== undefined) s.setSoulbound.run(u.soulbound ? 1 : 0, u.assetId);
        if (u.metadataVersion !== undefined) s.setMetadataVersion.run(u.metadataVersion, u.assetId);
      }
      for (const v of plan.metadataVersions ?? []) {
        s.insertMetadataVersion.run(
          v.assetId,
          v.version,
          v.name,
          JSON.stringify(v.metadata),
          v.changedBy,
          v.changedAt.getTime(),
        );
      }
      for (const t of plan.trades ?? []) {
        s.insertTrade.run(
          t.id,
          t.status,
          t.proposerUserId,
          t.proposerWallet,
          t.counterpartyWallet,
          JSON.stringify(t.offer),
          JSON.stringify(t.request),
          t.expiresAt.getTime(),
          t.createdAt.getTime(),
          t.updatedAt.getTime(),
          t.operationId,
          t.closedBy,
        );
      }
      for (const c of plan.tradeStatuses ?? []) {
        s.closeTrade.run(c.status, c.by, c.operationId, c.at.getTime(), c.tradeId);
      }
      for (const t of plan.transfers ?? []) {
        const at = t.createdAt.getTime();
        s.insertTransfer.run(
          t.id,
          sequence('transfer'),
          t.assetId,
          t.from,
          t.to,
          amount(t.amount),
          t.requestedBy,
          at,
          at,
        );
      }
      for (const p of plan.prices ?? []) {
        s.insertPrice.run(
          p.assetId,
          p.price,
          amount(p.priceScaled),
          p.currency,
          p.source,
          p.observedAt.getTime(),
          p.postedBy,
          p.createdAt.getTime(),
        );
      }
    }

    function record(plan: Plan): void {
      const idempotency = plan.idempotency;
      if (!idempotency) return;
      const { key, response } = idempotency;
      const at = plan.at;
      s.insertRecord.run(
        key.id,
        key.requestHash,
        response.status,
        JSON.stringify(response.body),
        JSON.stringify(response.headers),
        at.getTime(),
        key.expiresAt(at).getTime(),
      );
    }

    function publish(plan: Plan): void {
      // One writer at a time: ids become visible in commit order without the PostgreSQL lock.
      for (const e of plan.events ?? []) {
        s.insertEvent.run(
          e.type,
          e.occurredAt.getTime(),
          JSON.stringify(e.data),
          e.assetId,
          e.collectionId ?? null,
          JSON.stringify(e.wallets),
          e.fromWallet ?? null,
          e.toWallet ?? null,
          plan.operationId ?? null,
        );
        writer.changed(e);
      }
      for (const c of plan.ledgerChanges ?? []) {
        s.insertLedgerChange.run(c.kind, c.occurredAt.getTime(), c.userId, c.wallet);
        writer.changed(c);
      }
    }

    const run = (plan: Plan): PlanOutcome => {
      if (plan.idempotency) {
        const { key } = plan.idempotency;
        const at = plan.at;
        const existing = s.readRecord.get(key.id);
        if (existing) {
          if (epochMs(existing.expires_at) > at.getTime()) throw new Replay(existing);
          // An expired record protects nothing: make room for this request's.
          s.deleteExpired.run(key.id, at.getTime());
        }
      }
      check(plan);
      applyChanges(plan);
      publish(plan);
      record(plan);
      return { outcome: 'applied' };
    };
    return { writer, run };
  });

  return {
    async apply(plan) {
      // Until the first call has the connection, calls wait for it; the rest is synchronous.
      const { writer, run } = await prepared;
      try {
        return await writer.transaction(() => run(plan));
      } catch (error) {
        if (error instanceof Rejected) return { outcome: 'rejected', ...error.failure };
        if (error instanceof Replay) return { outcome: 'replay', record: error.record };
        throw error;
      }
    },
  };
}

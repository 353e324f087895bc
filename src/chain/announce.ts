// The advisory events of on-chain transfers before confirmation (issue 20): `chainTransferPending`
// when a transfer is read in a block that does not have the chain's confirmations yet, and
// `chainTransferRemoved` when a reorg drops one that was announced. Neither is a ledger change (the
// ledger moves with `newTransfer`, at confirmation: src/chain/projection.ts); both are events-only
// plans applied by the ledger store, so the commit hook publishes them like every event.
//
// Crash safety, the projection's scheme per (contract, block hash): the chain tables commit first
// (src/chain/apply.ts: a read range's rows with `announced` false; a rollback's `chain_transfer_removal`
// rows, written in the transaction that deletes the transfers). Then one plan per (contract, block
// hash) carries the events, keyed by the contract, the block hash and the group's first row id; then,
// in a transaction that checks the lease, the rows are marked announced (removals deleted) and the
// record deleted. A crash between the plan and the mark leaves the rows as they were: the next step
// builds the same key, the store answers `replay`, and only the mark is done. Each event is published
// once. Leftovers are announced at the start of every step, before the reorg check, so a removal
// always follows its pending event and a replaced transfer reads removed, then pending again.
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import { ChainContract, ChainTransfer, ChainTransferRemoval } from '../db/entities/index.ts';
import { inTransaction } from '../db/transactions.ts';
import { pendingEventsPlan, removedEventsPlan } from '../domain/ledger/chain-projection.ts';
import type { LedgerDatabase } from '../domain/ledger/store/index.ts';
import type { IdempotencyKey, Plan } from '../domain/ledger/store/plan.ts';
import { holdLease, LeaseLost } from './apply.ts';
import { type MovementRow, movementOf, tokenContract } from './rows.ts';

/**
 * A record outlives a crash's restart by far; it is deleted with the mark. One left over (its rows
 * confirmed before the restart re-announced them) expires on its own.
 */
const RECORD_LIFETIME_MS = 7 * 24 * 3600 * 1000;

export interface AnnounceOptions {
  chainId: number;
  holder: string;
  /** The chain's head as last read: transfers with `confirmations` blocks on top are not pending. */
  head: bigint;
  confirmations: number;
}

function keyOf(kind: 'pending' | 'removed', contract: ChainContract, blockHash: string, firstId: number) {
  const id = `chain-${kind}:${contract.chainId}:${contract.address}:${blockHash}:${firstId}`;
  const key: IdempotencyKey = {
    id,
    requestHash: createHash('sha256').update(id).digest('base64url'),
    expiresAt: (now) => new Date(now.getTime() + RECORD_LIFETIME_MS),
  };
  return key;
}

/** Rows by (contract, block hash), in the order given (block, log, batch). */
function groups<T extends MovementRow & { contract: { id: number } }>(rows: T[]): T[][] {
  const byBlock = new Map<string, T[]>();
  for (const row of rows) {
    const key = `${row.contract.id}|${row.blockHash}`;
    const group = byBlock.get(key);
    if (group) group.push(row);
    else byBlock.set(key, [row]);
  }
  return [...byBlock.values()];
}

interface Announcement<T> {
  kind: 'pending' | 'removed';
  /** The group's events plan. */
  plan(contract: ChainContract, group: T[], key: IdempotencyKey): Plan;
  /** Marks the group announced (inside the lease-checked transaction); answers the rows it changed. */
  mark(em: EntityManager, ids: number[]): Promise<number>;
}

/**
 * For each (contract, block hash) group of `rows`: its events plan through the ledger store (a
 * `replay` means it was applied before a crash), then its mark and the record's deletion in one
 * transaction that checks the lease.
 */
async function announceGroups<T extends MovementRow & { id: number; contract: { id: number } }>(
  { orm, store }: LedgerDatabase,
  options: AnnounceOptions,
  rows: T[],
  announcement: Announcement<T>,
): Promise<number> {
  if (rows.length === 0) return 0;
  const ids = [...new Set(rows.map((row) => row.contract.id))];
  const contracts = new Map(
    (await orm.em.fork().find(ChainContract, { id: { $in: ids } })).map((row) => [row.id, row]),
  );
  for (const group of groups(rows)) {
    const first = group.reduce((min, row) => (row.id < min.id ? row : min));
    const contract = contracts.get(first.contract.id) as ChainContract;
    const key = keyOf(announcement.kind, contract, first.blockHash, first.id);
    const outcome = await store.apply(announcement.plan(contract, group, key));
    if (outcome.outcome === 'rejected')
      throw new Error(`chain events rejected by guard ${outcome.guard.kind}`);
    const groupIds = group.map((row) => row.id);
    await inTransaction(orm, async (em) => {
      await holdLease(em, options.chainId, options.holder);
      if ((await announcement.mark(em, groupIds)) !== groupIds.length) {
        throw new LeaseLost(`chain ${options.chainId}: announced rows changed under us`);
      }
      await em
        .getConnection()
        .execute('delete from idempotency_record where id = ?', [key.id], 'run', em.getTransactionContext());
    });
  }
  return rows.length;
}

/** Publishes `chainTransferRemoved` for every removal a rollback left. Answers how many. */
export async function announceRemoved(database: LedgerDatabase, options: AnnounceOptions): Promise<number> {
  const { orm } = database;
  const removals = await orm.em
    .fork()
    .find(ChainTransferRemoval, { contract: { chainId: options.chainId } }, { orderBy: { id: 'asc' } });
  return announceGroups(database, options, removals, {
    kind: 'removed',
    plan: (contract, group, key) =>
      removedEventsPlan({
        contract: tokenContract(contract),
        movements: group.map((row) => ({ ...movementOf(row), forkBlock: row.forkBlock })),
        key,
        at: new Date(),
      }),
    mark: (em, ids) => em.nativeDelete(ChainTransferRemoval, { id: { $in: ids } }),
  });
}

/**
 * Publishes `chainTransferPending` for the chain's transfers not announced yet whose block has fewer
 * than `confirmations` blocks on top (a transfer read already confirmed, in a backfill or with
 * CHAIN_CONFIRMATIONS=0, is never pending: its `newTransfer` is its only event). Answers how many.
 */
export async function announcePending(database: LedgerDatabase, options: AnnounceOptions): Promise<number> {
  const { orm } = database;
  const unconfirmedFrom = options.head - BigInt(options.confirmations) + 1n;
  const rows = await orm.em.fork().find(
    ChainTransfer,
    {
      contract: { chainId: options.chainId },
      status: 'pending',
      announced: false,
      blockNumber: { $gte: Number(unconfirmedFrom < 0n ? 0n : unconfirmedFrom) },
    },
    { orderBy: { blockNumber: 'asc', logIndex: 'asc', batchIndex: 'asc' } },
  );
  return announceGroups(database, options, rows, {
    kind: 'pending',
    plan: (contract, group, key) =>
      pendingEventsPlan({
        contract: tokenContract(contract),
        movements: group.map(movementOf),
        head: Number(options.head),
        confirmations: options.confirmations,
        key,
        at: new Date(),
      }),
    mark: (em, ids) =>
      em.nativeUpdate(ChainTransfer, { id: { $in: ids }, announced: false }, { announced: true }),
  });
}

/** Removals first, then pending transfers: a replaced transfer reads removed, then pending again. */
export async function announce(
  database: LedgerDatabase,
  options: AnnounceOptions,
): Promise<{ removed: number; pending: number }> {
  const removed = await announceRemoved(database, options);
  const pending = await announcePending(database, options);
  return { removed, pending };
}

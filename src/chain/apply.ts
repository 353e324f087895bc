// Every write of the chain indexer, in one module, so that it can move to the ledger store's write
// API when that lands (issue 20 asks chain holdings to go through the same store and commit hook).
// Each function is one transaction that first checks the caller still holds the chain's lease.
import { FlushMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import {
  ChainBlock,
  ChainContract,
  type ChainHolding,
  ChainHolding as ChainHoldingEntity,
  ChainLease,
  ChainTransfer,
  ChainTransferRemoval,
} from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { forUpdate, inTransaction } from '../db/transactions.ts';
import { UINT256_MAX } from '../db/types/uint256-range.ts';
import { boundedSum } from '../domain/ledger/chain-projection.ts';
import { type Movement, ZERO_ADDRESS } from './logs.ts';

/** The indexer's transactions: no flush before a query (its writes are flushed once, at the end). */
function indexerTransaction<T>(orm: Orm, work: (em: EntityManager) => Promise<T>): Promise<T> {
  return inTransaction(orm, work, { flushMode: FlushMode.COMMIT });
}

export class LeaseLost extends Error {
  override name = 'LeaseLost';
}

/** The checkpoint moved under us (another indexer wrote this range): nothing was written. */
export class CheckpointMoved extends Error {
  override name = 'CheckpointMoved';
}

export async function holdLease(em: EntityManager, chainId: number, holder: string): Promise<void> {
  const lease = await em.findOne(ChainLease, { chainId }, forUpdate(em));
  if (!lease || lease.holder !== holder || lease.expiresAt.getTime() <= Date.now()) {
    throw new LeaseLost(`chain ${chainId}: the indexer lease is not held by ${holder}`);
  }
}

/**
 * Takes or renews the chain's lease for `ttlMs`: true when `holder` holds it afterwards. An expired
 * lease (its holder stopped renewing: crashed or cut off) is taken over.
 */
export async function acquireLease(
  orm: Orm,
  chainId: number,
  holder: string,
  ttlMs: number,
): Promise<boolean> {
  const em = orm.em.fork();
  const now = new Date();
  const expiresAt = new Date(now.getTime() + ttlMs);
  const renewed = await em.nativeUpdate(
    ChainLease,
    { chainId, $or: [{ holder }, { expiresAt: { $lte: now } }] },
    { holder, expiresAt },
  );
  if (renewed > 0) return true;
  try {
    await em.insert(ChainLease, { chainId, holder, expiresAt });
    return true;
  } catch {
    return false; // another instance holds it (or inserted it first)
  }
}

/** Gives the lease up (on shutdown), so another instance takes over without waiting for expiry. */
export async function releaseLease(orm: Orm, chainId: number, holder: string): Promise<void> {
  await orm.em.fork().nativeDelete(ChainLease, { chainId, holder });
}

type Delta = Map<string, bigint>;
const holdingKey = (contractId: number, tokenId: string, address: string) =>
  `${contractId}|${tokenId}|${address}`;

function addDelta(deltas: Delta, contractId: number, tokenId: string, address: string, amount: bigint): void {
  if (address === ZERO_ADDRESS) return; // mints come from, burns go to, the zero address
  const key = holdingKey(contractId, tokenId, address);
  deltas.set(key, (deltas.get(key) ?? 0n) + amount);
}

/**
 * Applies net balance deltas to chain_holding. A balance below zero is clamped at zero. Past
 * 2^256 - 1: `bound` throws ChainAmountOverflow (reading a range: the contract's data error, nothing
 * of the range is written), `saturate` keeps 2^256 - 1 (a rollback undoing what was clamped).
 */
async function applyDeltas(
  em: EntityManager,
  deltas: Delta,
  now: Date,
  overflow: 'bound' | 'saturate',
): Promise<number> {
  let clamped = 0;
  const changes = [...deltas].filter(([, delta]) => delta !== 0n);
  // One query per 500 keys, not one per key: a range can touch thousands of addresses.
  const existing = new Map<string, ChainHolding>();
  for (let i = 0; i < changes.length; i += 500) {
    const chunk = changes.slice(i, i + 500).map(([key]) => key.split('|') as [string, string, string]);
    const rows = await em.find(ChainHoldingEntity, {
      contract: { $in: [...new Set(chunk.map(([contractId]) => Number(contractId)))] },
      address: { $in: [...new Set(chunk.map(([, , address]) => address))] },
    });
    for (const row of rows) existing.set(holdingKey(row.contract.id, row.tokenId, row.address), row);
  }
  for (const [key, delta] of changes) {
    const [contractId, tokenId, address] = key.split('|') as [string, string, string];
    const row = existing.get(key);
    let balance = (row?.balance ?? 0n) + delta;
    if (balance > UINT256_MAX) {
      if (overflow === 'bound')
        boundedSum(row?.balance ?? 0n, delta, `the balance of token "${tokenId}" held by ${address}`);
      balance = UINT256_MAX;
    }
    if (balance < 0n) {
      // Only when history before fromBlock is missing (registration checks fromBlock against the
      // deployment where the node can tell): never store a negative balance.
      clamped += 1;
      balance = 0n;
    }
    if (row && balance === 0n) em.remove(row);
    else if (row) Object.assign(row, { balance, updatedAt: now });
    else if (balance > 0n) {
      const contract = em.getReference(ChainContract, Number(contractId));
      em.create(ChainHoldingEntity, { contract, tokenId, address, balance, updatedAt: now });
    }
  }
  return clamped;
}

export interface RangeResult {
  contractId: number;
  /** The checkpoint the range starts at (the contract's `nextBlock` when it was read). */
  from: bigint;
  /** The last block of the range; the checkpoint becomes `to + 1`. */
  to: bigint;
  movements: Movement[];
  /** Hashes of the blocks read (at least `to`): kept for reorg detection. */
  blocks: Map<bigint, `0x${string}`>;
}

/**
 * Applies one contract's range: its transfers, the holdings they change, the block hashes and the
 * checkpoint, in one transaction. A crash before the COMMIT leaves nothing; after it, the range is
 * never read again, so no transfer is lost or counted twice.
 */
export async function applyRange(
  orm: Orm,
  chainId: number,
  holder: string,
  range: RangeResult,
): Promise<{ inserted: number; clamped: number }> {
  return indexerTransaction(orm, async (em) => {
    await holdLease(em, chainId, holder);
    // Locked on PostgreSQL: an admin's suspension or unregistration waits for this range, or wins.
    const contract = await em.findOneOrFail(ChainContract, { id: range.contractId }, forUpdate(em));
    if (BigInt(contract.nextBlock) !== range.from || contract.status !== 'active')
      throw new CheckpointMoved(`contract ${contract.id}`);
    const now = new Date();
    const deltas: Delta = new Map();
    for (const movement of range.movements) {
      em.create(ChainTransfer, {
        contract,
        blockNumber: Number(movement.blockNumber),
        blockHash: movement.blockHash,
        txHash: movement.txHash,
        logIndex: movement.logIndex,
        batchIndex: movement.batchIndex,
        tokenId: movement.tokenId,
        from: movement.from,
        to: movement.to,
        amount: movement.amount,
        status: 'pending',
        createdAt: now,
      });
      addDelta(deltas, contract.id, movement.tokenId, movement.from, -movement.amount);
      addDelta(deltas, contract.id, movement.tokenId, movement.to, movement.amount);
    }
    const clamped = await applyDeltas(em, deltas, now, 'bound');
    for (const [number, hash] of range.blocks) {
      const known = await em.findOne(ChainBlock, { chainId, number: Number(number) });
      if (known && known.hash !== hash) throw new CheckpointMoved(`block ${number} changed while reading`);
      if (!known) em.create(ChainBlock, { chainId, number: Number(number), hash });
    }
    contract.nextBlock = Number(range.to + 1n);
    await em.flush();
    return { inserted: range.movements.length, clamped };
  });
}

/**
 * Marks the chain's pending transfers up to `upTo` confirmed and forgets block hashes below the
 * unconfirmed window (keeping the highest one, the reorg check's anchor). Answers the transfers
 * confirmed now (the events to announce).
 */
export async function confirmUpTo(
  orm: Orm,
  chainId: number,
  holder: string,
  upTo: bigint,
): Promise<ChainTransfer[]> {
  return indexerTransaction(orm, async (em) => {
    await holdLease(em, chainId, holder);
    const confirmed = await em.find(
      ChainTransfer,
      { contract: { chainId }, status: 'pending', blockNumber: { $lte: Number(upTo) } },
      { orderBy: { blockNumber: 'asc', logIndex: 'asc', batchIndex: 'asc' }, populate: ['contract'] },
    );
    for (const transfer of confirmed) transfer.status = 'confirmed';
    await em.flush();
    const top = await em.findOne(ChainBlock, { chainId }, { orderBy: { number: 'desc' } });
    if (top) {
      await em.nativeDelete(ChainBlock, { chainId, number: { $lt: Math.min(Number(upTo), top.number) } });
    }
    return confirmed;
  });
}

/** The chain's stored block hashes, highest first (the unconfirmed window). */
export async function storedBlocks(orm: Orm, chainId: number): Promise<ChainBlock[]> {
  return orm.em.fork().find(ChainBlock, { chainId }, { orderBy: { number: 'desc' } });
}

/**
 * Undoes everything read above `forkBlock` on the chain: its transfers are deleted and their
 * holdings reverted, the block hashes forgotten, and every contract's checkpoint moved back to
 * `forkBlock + 1`, in one transaction. A pending transfer whose `chainTransferPending` event was
 * published leaves a ChainTransferRemoval row in the same transaction (its `chainTransferRemoved`
 * event to publish: src/chain/announce.ts). Answers the removed transfers.
 */
export async function rollbackAbove(
  orm: Orm,
  chainId: number,
  holder: string,
  forkBlock: bigint,
): Promise<ChainTransfer[]> {
  return indexerTransaction(orm, async (em) => {
    await holdLease(em, chainId, holder);
    const removed = await em.find(
      ChainTransfer,
      { contract: { chainId }, blockNumber: { $gt: Number(forkBlock) } },
      { orderBy: { blockNumber: 'desc', logIndex: 'desc', batchIndex: 'desc' }, populate: ['contract'] },
    );
    const deltas: Delta = new Map();
    const now = new Date();
    // Oldest first, so that the removals' ids (the order their events are published in) follow the chain.
    for (const transfer of removed.toReversed()) {
      const contractId = transfer.contract.id;
      addDelta(deltas, contractId, transfer.tokenId, transfer.from, transfer.amount);
      addDelta(deltas, contractId, transfer.tokenId, transfer.to, -transfer.amount);
      if (transfer.announced && transfer.status === 'pending') {
        em.create(ChainTransferRemoval, {
          contract: transfer.contract,
          blockNumber: transfer.blockNumber,
          blockHash: transfer.blockHash,
          txHash: transfer.txHash,
          logIndex: transfer.logIndex,
          batchIndex: transfer.batchIndex,
          tokenId: transfer.tokenId,
          from: transfer.from,
          to: transfer.to,
          amount: transfer.amount,
          forkBlock: Number(forkBlock),
          removedAt: now,
        });
      }
      em.remove(transfer);
    }
    await applyDeltas(em, deltas, now, 'saturate');
    await em.nativeDelete(ChainBlock, { chainId, number: { $gt: Number(forkBlock) } });
    const contracts = await em.find(ChainContract, { chainId, nextBlock: { $gt: Number(forkBlock) + 1 } });
    for (const contract of contracts)
      contract.nextBlock = Math.max(contract.fromBlock, Number(forkBlock) + 1);
    await em.flush();
    return removed;
  });
}

// The indexer of one chain: backfills every registered contract from its `fromBlock`, then follows
// the head. Each step reads the contracts that follow the head (within one range of it) up to the
// head, then ranges of the contracts furthest behind (at least one, more within the backfill's time
// budget), so a deep backfill never holds the others up (security issue 30.4). A data error of one contract suspends that
// contract only (30.1: src/chain/suspension.ts); node errors pause the chain with back-off. Keeps block hashes for the unconfirmed window and rolls back to the fork point when the
// node's chain no longer contains a block it read; marks transfers confirmed after the chain's
// confirmations. One indexer per chain per deployment, by a lease row (src/chain/apply.ts).
import { randomUUID } from 'node:crypto';
import type { Address, Hex } from 'viem';
import type { ChainEndpoint, ChainSettings } from '../config/index.ts';
import { ChainContract, type ChainTransfer } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import type { LedgerDatabase } from '../domain/ledger/store/index.ts';
import type { Logger } from '../observability/logger.ts';
import { announce } from './announce.ts';
import {
  acquireLease,
  applyRange,
  CheckpointMoved,
  confirmUpTo,
  LeaseLost,
  type RangeResult,
  releaseLease,
  rollbackAbove,
  storedBlocks,
} from './apply.ts';
import { type Movement, movementsOf, type RpcLog, ZERO_ADDRESS } from './logs.ts';
import { MetadataFetcher } from './metadata.ts';
import { projectConfirmed } from './projection.ts';
import { ChainRpc, isRangeTooLarge, isTimeout } from './rpc.ts';
import { isDataError, reasonOf, suspendContract } from './suspension.ts';

export type IndexerState = 'starting' | 'standby' | 'backfilling' | 'following' | 'paused' | 'stopped';

export interface ChainStatus {
  chainId: number;
  state: IndexerState;
  /** The node's latest block, as last seen. */
  head: bigint | null;
  /** The lowest checkpoint over the chain's contracts, minus one: every block up to it is applied. */
  indexedBlock: bigint | null;
  /** head - indexedBlock. */
  lag: bigint | null;
  confirmations: number;
  lastError: string | null;
  rpcErrors: number;
  /** Steps failed by a data error no single contract could be blamed for (not retried as node errors). */
  dataErrors: number;
  reorgs: number;
  /** Active contracts more than one range behind the head (backfilling beside the others). */
  backfilling: number;
  /** Contracts suspended (by a data error of their own, or an admin), as last read. */
  suspended: SuspendedContract[];
}

export interface SuspendedContract {
  /** Lowercase. */
  address: string;
  reason: string | null;
  since: Date | null;
}

export interface IndexerHooks {
  /** Transfers that reached their confirmations (committed): announce them. */
  confirmed?(transfers: ChainTransfer[]): void;
  /** Transfers a reorg dropped (committed). */
  removed?(transfers: ChainTransfer[]): void;
}

/**
 * How long a step reads the backfill (ranges of the contracts more than one range behind) after the
 * head-following contracts: what a deep backfill adds at most to their lag, besides one range. The
 * default of the `backfillBudgetMs` option; a step reads at least one range of the backfill.
 */
const BACKFILL_BUDGET_MS = 250;

/** The longest pause between two failed steps. */
const MAX_BACKOFF_MS = 30_000;

export class ChainIdMismatch extends Error {
  override name = 'ChainIdMismatch';
}

/** Which decoded movements belong to a contract of each standard (a Transfer of the other form is ignored). */
const STANDARD_ACCEPTS: Record<string, (movement: Movement) => boolean> = {
  erc20: (movement) => movement.event === 'Transfer' && movement.tokenId === '',
  erc721: (movement) => movement.event === 'Transfer' && movement.tokenId !== '',
  erc1155: (movement) => movement.event !== 'Transfer',
};

export class ChainIndexer {
  readonly rpc: ChainRpc;
  readonly holder: string;
  private state: IndexerState = 'starting';
  private head: bigint | null = null;
  private indexedBlock: bigint | null = null;
  private lastError: string | null = null;
  private rpcErrors = 0;
  private dataErrors = 0;
  private reorgs = 0;
  private backfilling = 0;
  private suspended: SuspendedContract[] = [];
  private failures = 0;
  private running = false;
  private chainIdVerified = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly database: LedgerDatabase;
  private readonly orm: Orm;
  private readonly endpoint: ChainEndpoint;
  private readonly settings: ChainSettings;
  private readonly logger: Logger;
  private readonly hooks: IndexerHooks;
  private readonly leaseMs: number;
  private readonly backfillBudgetMs: number;
  private readonly tokenImage: string;
  /** Reads new tokens' metadata in the background (absent when CHAIN_METADATA is off). */
  readonly metadata: MetadataFetcher | null;

  constructor(
    database: LedgerDatabase,
    endpoint: ChainEndpoint,
    settings: ChainSettings,
    logger: Logger,
    options: {
      holder?: string;
      leaseMs?: number;
      /** The backfill's time budget in a step (default BACKFILL_BUDGET_MS; 0: one range a step). */
      backfillBudgetMs?: number;
      hooks?: IndexerHooks;
      tokenImage?: string;
    } = {},
  ) {
    this.database = database;
    this.orm = database.orm;
    this.endpoint = endpoint;
    this.settings = settings;
    this.logger = logger;
    this.hooks = options.hooks ?? {};
    this.holder = options.holder ?? randomUUID();
    this.leaseMs = options.leaseMs ?? Math.max(15_000, settings.pollMs * 5);
    this.backfillBudgetMs = options.backfillBudgetMs ?? BACKFILL_BUDGET_MS;
    this.rpc = new ChainRpc(endpoint, settings);
    this.tokenImage = options.tokenImage ?? 'https://localhost/explorer/chain-token.svg';
    this.metadata = settings.metadata
      ? new MetadataFetcher(database, this.rpc, settings.metadata, logger)
      : null;
  }

  get chainId(): number {
    return this.endpoint.chainId;
  }

  status(): ChainStatus {
    return {
      chainId: this.chainId,
      state: this.state,
      head: this.head,
      indexedBlock: this.indexedBlock,
      lag: this.head !== null && this.indexedBlock !== null ? this.head - this.indexedBlock : null,
      confirmations: this.endpoint.confirmations,
      lastError: this.lastError,
      rpcErrors: this.rpcErrors,
      dataErrors: this.dataErrors,
      reorgs: this.reorgs,
      backfilling: this.backfilling,
      suspended: this.suspended,
    };
  }

  /** Checks the node serves the configured chain (`eth_chainId`); throws ChainIdMismatch if not. */
  async verifyChainId(): Promise<void> {
    const actual = await this.rpc.chainId();
    if (actual !== this.chainId) {
      throw new ChainIdMismatch(
        `the node at CHAIN ${this.chainId}'s RPC URL answers eth_chainId ${actual}, not ${this.chainId}`,
      );
    }
    this.chainIdVerified = true;
  }

  /** Starts the loop in the background: steps until caught up, then polls every CHAIN_POLL_MS. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.running = false;
    this.wake?.();
    this.metadata?.stop();
    await this.loop;
    this.state = 'stopped';
    if (options.release !== false) await releaseLease(this.orm, this.chainId, this.holder).catch(() => {});
    await this.rpc.close().catch(() => {});
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = null;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let outcome: 'progress' | 'idle' | 'standby';
      try {
        outcome = await this.step();
        this.failures = 0;
        this.lastError = null;
      } catch (error) {
        if (error instanceof LeaseLost || error instanceof CheckpointMoved) {
          this.logger.warn({ chainId: this.chainId, err: error.message }, 'chain indexer: retrying step');
          outcome = 'standby';
        } else {
          await this.pause(error);
          continue;
        }
      }
      if (outcome !== 'progress' && this.running) await this.sleep(this.settings.pollMs);
    }
  }

  /**
   * After a failed step. Node errors and time-outs (and a database away): pause, back off, resume
   * where the checkpoints are. A data error that escaped the per-contract isolation (in the
   * chain-wide confirmation or announcement) fails the same way however soon it is retried: it is
   * counted apart from the node's errors and retried only at the longest back-off.
   */
  private async pause(error: unknown): Promise<void> {
    this.failures += 1;
    const data = isDataError(error);
    if (data) this.dataErrors += 1;
    else this.rpcErrors += 1;
    this.lastError = (error as Error).message?.split('\n')[0] ?? String(error);
    this.state = 'paused';
    const delay = data
      ? MAX_BACKOFF_MS
      : Math.min(MAX_BACKOFF_MS, this.settings.pollMs * 2 ** Math.min(this.failures, 10));
    const log = data ? this.logger.error.bind(this.logger) : this.logger.warn.bind(this.logger);
    log(
      { chainId: this.chainId, err: this.lastError, retryInMs: delay, dataError: data },
      'chain indexer paused',
    );
    await this.sleep(delay);
  }

  /** The chain's contracts not unregistered; notes the suspended ones (for /readyz and /metrics). */
  private async contracts(): Promise<ChainContract[]> {
    const rows = await this.orm.em
      .fork()
      .find(
        ChainContract,
        { chainId: this.chainId, status: { $ne: 'unregistered' } },
        { orderBy: { id: 'asc' } },
      );
    this.suspended = rows
      .filter((row) => row.status === 'suspended')
      .map((row) => ({
        address: row.address,
        reason: row.suspendedReason ?? null,
        since: row.suspendedAt ?? null,
      }));
    return rows.filter((row) => row.status === 'active');
  }

  /**
   * One step: the lease, the reorg check, the head-following contracts up to the head, one range of
   * the contracts furthest behind, confirmations, the projection.
   * Public for tests, which drive the indexer step by step.
   */
  async step(): Promise<'progress' | 'idle' | 'standby'> {
    if (!this.chainIdVerified) await this.verifyChainId();
    if (!(await acquireLease(this.orm, this.chainId, this.holder, this.leaseMs))) {
      await this.contracts(); // the suspended ones, for this instance's /readyz and /metrics
      this.state = 'standby';
      return 'standby';
    }
    const head = await this.rpc.blockNumber();
    this.head = head;
    // The pending and removed events a crash (or a failed step) left unpublished, before anything else.
    await this.announce(head);

    // Reorg check: the highest block read must still be the node's block at that height.
    const stored = await storedBlocks(this.orm, this.chainId);
    const top = stored[0];
    if (top) {
      const node = await this.rpc.block(BigInt(top.number));
      if (!node || node.hash !== top.hash) {
        await this.rollBack(stored);
        return 'progress';
      }
    }

    const contracts = await this.contracts();
    if (contracts.length === 0) {
      this.indexedBlock = head;
      this.backfilling = 0;
      this.state = 'following';
      return 'idle';
    }
    const lowest = (rows: ChainContract[]) =>
      rows.reduce((min, contract) => Math.min(min, contract.nextBlock), Number.MAX_SAFE_INTEGER);
    this.indexedBlock = BigInt(lowest(contracts)) - 1n;
    // Within one range of the head: read every step, first. Further behind: the backfill, beside.
    const window = BigInt(this.settings.maxBlockRange);
    const follows = (contract: ChainContract) => head - BigInt(contract.nextBlock) < window;
    const behind = contracts.filter((contract) => !follows(contract));
    this.backfilling = behind.length;
    let progressed = false;
    for (const [next, group] of Map.groupBy(contracts.filter(follows), (contract) => contract.nextBlock)) {
      if (BigInt(next) > head) continue;
      const read = await this.readRange(group, BigInt(next), head, stored);
      if (read === 'reorg') return 'progress';
      progressed ||= read === 'read';
    }
    const backfill = await this.backfill(behind, head, stored);
    if (backfill === 'reorg') return 'progress';
    progressed ||= backfill === 'read';
    if (progressed) this.indexedBlock = BigInt(lowest(await this.contracts())) - 1n;
    // What this range read in blocks not yet confirmed: `chainTransferPending`, before confirming.
    if (progressed) await this.announce(head);
    this.state =
      this.indexedBlock !== null && head - this.indexedBlock > BigInt(this.endpoint.confirmations)
        ? 'backfilling'
        : 'following';

    // Confirmations: a transfer is confirmed once `confirmations` blocks are on top of its block.
    const confirmedUpTo = head - BigInt(this.endpoint.confirmations);
    if (confirmedUpTo >= 0n) {
      const confirmed = await confirmUpTo(this.orm, this.chainId, this.holder, confirmedUpTo);
      if (confirmed.length > 0) this.hooks.confirmed?.(confirmed);
    }
    // Confirmed transfers into the ledger (also what a crash left between a batch and its cursor).
    const projection = await projectConfirmed(this.database, {
      chainId: this.chainId,
      holder: this.holder,
      image: this.tokenImage,
    });
    for (const { contract, reason } of projection.suspended) this.suspendedLog(contract, reason);
    if (projection.suspended.length > 0) await this.contracts(); // for /readyz and /metrics
    if (projection.more || projection.suspended.length > 0) return 'progress';
    return progressed && this.indexedBlock !== null && this.indexedBlock < head ? 'progress' : 'idle';
  }

  /**
   * The backfill's budget in a step: ranges of the contracts furthest behind (they join as their
   * checkpoints meet): one, then more for the rest of backfillBudgetMs, so the head-following
   * contracts are read again soon.
   */
  private async backfill(
    behind: ChainContract[],
    head: bigint,
    stored: { number: number; hash: string }[],
  ): Promise<'read' | 'skipped' | 'reorg'> {
    const deadline = Date.now() + this.backfillBudgetMs;
    let outcome: 'read' | 'skipped' | 'reorg' = 'skipped';
    while (outcome === 'skipped' || Date.now() < deadline) {
      const active = behind.filter((contract) => contract.status === 'active');
      const furthest = active.reduce(
        (min, contract) => Math.min(min, contract.nextBlock),
        Number.MAX_SAFE_INTEGER,
      );
      if (active.length === 0 || head - BigInt(furthest) < BigInt(this.settings.maxBlockRange)) break;
      const group = active.filter((contract) => contract.nextBlock === furthest);
      const read = await this.readRange(group, BigInt(furthest), head, stored);
      if (read !== 'read') return read === 'reorg' ? read : outcome;
      outcome = 'read';
    }
    return outcome;
  }

  /**
   * Reads `group` (contracts with the same checkpoint) from `from` and applies what it read. The
   * end block's hash is read before and after the logs: if it changed, the chain moved under the
   * read and nothing is applied. The block below `from`, if its hash is kept, must still be the
   * node's (the parent of what was read): otherwise this is a reorg. Each contract's range is applied
   * on its own: a data error in one suspends that contract, the group's others are applied.
   * Answers `read`, `skipped` (nothing applied: the chain moved under the read) or `reorg`.
   */
  private async readRange(
    group: ChainContract[],
    from: bigint,
    head: bigint,
    stored: { number: number; hash: string }[],
  ): Promise<'read' | 'skipped' | 'reorg'> {
    let end: bigint;
    let logs: RpcLog[];
    for (;;) {
      end = from + BigInt(this.rpc.range) - 1n < head ? from + BigInt(this.rpc.range) - 1n : head;
      const before = await this.rpc.block(end);
      if (!before) return 'skipped';
      try {
        logs = await this.rpc.logsExact(
          group.map((contract) => contract.address as Address),
          from,
          end,
        );
      } catch (error) {
        if (this.rpc.range > 1 && isRangeTooLarge(error)) {
          this.rpc.shrink();
          continue;
        }
        if (this.rpc.range > 1 && isTimeout(error)) this.rpc.shrink(); // and pause: the node may be down
        throw error;
      }
      this.rpc.grow();
      const after = await this.rpc.block(end);
      if (!after || after.hash !== before.hash) return 'skipped';
      const parent = stored.find((block) => BigInt(block.number) === from - 1n);
      if (parent) {
        const node = await this.rpc.block(from - 1n);
        if (!node || node.hash !== parent.hash) {
          await this.rollBack(stored);
          return 'reorg';
        }
      }
      const blocks = new Map<bigint, Hex>([[end, after.hash]]);
      const { movements, undecodable } = movementsOf(logs);
      if (movements.some((movement) => movement.blockNumber === end && movement.blockHash !== after.hash))
        return 'skipped';
      for (const movement of movements) blocks.set(movement.blockNumber, movement.blockHash);
      if (undecodable > 0)
        this.logger.warn(
          { chainId: this.chainId, undecodable },
          'chain indexer: skipped logs that do not decode',
        );
      // Reading may have taken long (big answers, halved ranges): renew the lease before writing.
      if (!(await acquireLease(this.orm, this.chainId, this.holder, this.leaseMs))) return 'skipped';
      for (const contract of group) {
        const accepts = STANDARD_ACCEPTS[contract.standard] ?? (() => false);
        const own = movements.filter(
          (movement) => movement.contract === contract.address && accepts(movement),
        );
        const range: RangeResult = { contractId: contract.id, from, to: end, movements: own, blocks };
        if (!(await this.applyOwn(contract, range))) continue;
        // New tokens' metadata, read in the background (never holds this loop up).
        if (this.metadata && contract.standard !== 'erc20') {
          const minted = own.filter((movement) => movement.from === ZERO_ADDRESS);
          this.metadata.enqueue(
            minted.map((movement) => ({ contractId: contract.id, tokenId: movement.tokenId })),
          );
        }
      }
      return 'read';
    }
  }

  /**
   * Applies one contract's range; a data error suspends the contract (answers false) instead of
   * failing the step: the same logs would fail the same way on every retry.
   */
  private async applyOwn(contract: ChainContract, range: RangeResult): Promise<boolean> {
    try {
      await applyRange(this.orm, this.chainId, this.holder, range);
      contract.nextBlock = Number(range.to + 1n); // as committed: the backfill's next range starts there
      return true;
    } catch (error) {
      if (!isDataError(error)) throw error;
      contract.status = 'suspended';
      const reason = `blocks ${range.from}-${range.to}: ${reasonOf(error)}`;
      if (await suspendContract(this.orm, contract.id, reason)) this.suspendedLog(contract, reason);
      return false;
    }
  }

  private suspendedLog(contract: ChainContract, reason: string): void {
    this.logger.error(
      { chainId: this.chainId, contract: contract.address, reason },
      "chain contract suspended by a data error of its own; the chain's other contracts go on",
    );
  }

  /** Publishes the advisory events of what the chain tables hold unannounced (src/chain/announce.ts). */
  private async announce(head: bigint): Promise<void> {
    await announce(this.database, {
      chainId: this.chainId,
      holder: this.holder,
      head,
      confirmations: this.endpoint.confirmations,
    });
  }

  /**
   * Walks the kept hashes down to the highest block the node still has, and rolls back above it; the
   * announced transfers it dropped are published as `chainTransferRemoved` right after.
   */
  private async rollBack(stored: { number: number; hash: string }[]): Promise<void> {
    let fork: bigint | null = null;
    for (const block of stored) {
      const node = await this.rpc.block(BigInt(block.number));
      if (node && node.hash === block.hash) {
        fork = BigInt(block.number);
        break;
      }
    }
    const lowest = stored[stored.length - 1];
    if (fork === null) {
      // Deeper than the kept window (more than the confirmations): undo the whole window.
      fork = lowest ? BigInt(lowest.number) - 1n : 0n;
      this.logger.error(
        { chainId: this.chainId, fork: fork.toString() },
        'chain reorg deeper than the kept block hashes',
      );
    }
    const removed = await rollbackAbove(this.orm, this.chainId, this.holder, fork);
    this.reorgs += 1;
    this.logger.warn(
      { chainId: this.chainId, fork: fork.toString(), removed: removed.length },
      'chain reorg rolled back',
    );
    if (removed.length > 0) this.hooks.removed?.(removed);
    if (this.head !== null) await this.announce(this.head);
  }
}

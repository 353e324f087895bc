// The on-chain side of the service: one JSON-RPC client and one indexer per configured chain.
// At start-up each node's `eth_chainId` is checked against its configuration (a mismatch stops the
// start; a node that does not answer yet is checked again by its indexer before it reads anything).
import type { Config } from '../config/index.ts';
import { ConfigError } from '../config/index.ts';
import type { Actor } from '../domain/ledger/actor.ts';
import type { LedgerDatabase } from '../domain/ledger/store/index.ts';
import type { Logger } from '../observability/logger.ts';
import { adminResume, adminSuspend, adminUnregister, type ContractRef } from './admin.ts';
import {
  listContracts,
  type RegisterContractInput,
  type RegisteredContract,
  registerContract,
} from './contracts.ts';
import { ChainIdMismatch, ChainIndexer, type ChainStatus, type IndexerHooks } from './indexer.ts';
import { type ReassignContractInput, reassignContract } from './reassign.ts';
import type { ChainRpc } from './rpc.ts';

export interface ChainModule {
  register(actor: Actor, input: RegisterContractInput): Promise<RegisteredContract>;
  list(collectionId: string): Promise<RegisteredContract[]>;
  /** Admins: stop indexing a contract (30.1), resume it from its checkpoint, or unregister it. */
  suspend(actor: Actor, ref: ContractRef, reason: string): Promise<RegisteredContract>;
  resume(actor: Actor, ref: ContractRef): Promise<RegisteredContract>;
  unregister(actor: Actor, ref: ContractRef): Promise<void>;
  /** Admins: moves a registered contract to another collection (src/chain/reassign.ts). */
  reassign(actor: Actor, input: ReassignContractInput): Promise<RegisteredContract>;
  /** Per configured chain: head, indexed block, lag, state. */
  status(): ChainStatus[];
  stop(): Promise<void>;
}

export async function createChainModule(deps: {
  database: LedgerDatabase;
  config: Config;
  logger: Logger;
  hooks?: IndexerHooks;
}): Promise<ChainModule> {
  const { database, config, logger } = deps;
  const { orm } = database;
  // An on-chain token's image until its metadata is fetched (explorer/public/chain-token.svg).
  const tokenImage = `${config.publicUrl}/explorer/chain-token.svg`;
  const indexers = config.chain.chains.map(
    (endpoint) =>
      new ChainIndexer(database, endpoint, config.chain, logger, { hooks: deps.hooks, tokenImage }),
  );
  for (const indexer of indexers) {
    try {
      await indexer.verifyChainId();
    } catch (error) {
      if (error instanceof ChainIdMismatch) {
        for (const other of indexers) await other.stop({ release: false });
        throw new ConfigError(error.message);
      }
      logger.warn(
        { chainId: indexer.chainId, err: (error as Error).message },
        'chain node does not answer at start-up; its indexer checks eth_chainId before reading',
      );
    }
  }
  if (config.chain.indexer) for (const indexer of indexers) indexer.start();
  const rpcs = new Map<number, ChainRpc>(indexers.map((indexer) => [indexer.chainId, indexer.rpc]));
  return {
    register: (actor, input) => registerContract(database, rpcs, actor, input, tokenImage),
    list: (collectionId) => listContracts(orm, collectionId),
    suspend: (actor, ref, reason) => adminSuspend(orm, actor, ref, reason),
    resume: (actor, ref) => adminResume(orm, actor, ref),
    unregister: (actor, ref) => adminUnregister(orm, actor, ref),
    reassign: (actor, input) => reassignContract(orm, actor, input),
    status: () => indexers.map((indexer) => indexer.status()),
    async stop() {
      await Promise.all(indexers.map((indexer) => indexer.stop()));
    },
  };
}

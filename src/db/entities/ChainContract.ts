import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Collection } from './Collection.ts';

export const CHAIN_STANDARDS = ['erc20', 'erc721', 'erc1155'] as const;
export type ChainStandard = (typeof CHAIN_STANDARDS)[number];
/**
 * `active`: indexed. `suspended`: not read nor projected (a data error of its own, or an admin), why
 * in `suspendedReason`, until an admin resumes it. `unregistered`: an admin removed it; the row stays
 * as a tombstone (its ledger assets are history, and the address is not registered again).
 */
export const CHAIN_CONTRACT_STATUSES = ['active', 'suspended', 'unregistered'] as const;

/**
 * A token contract on an EVM chain, registered to a collection by its studio. `nextBlock` is the
 * indexer's checkpoint for it: every block below it has been applied to the holdings, and it is
 * written in the same transaction as the holdings (src/chain/apply.ts).
 */
export const ChainContract = defineEntity({
  name: 'ChainContract',
  properties: {
    id: bigintAutoincrementId(),
    chainId: p.integer(),
    /** Lowercase address (EIP-55 form on output). */
    address: p.string().length(42),
    standard: p.enum(CHAIN_STANDARDS),
    collection: () => p.manyToOne(Collection).ref().index(),
    fromBlock: p.bigint('number'),
    nextBlock: p.bigint('number'),
    /**
     * The projection's cursor (src/chain/projection.ts): every confirmed transfer of a block up to
     * it is in the ledger. Null: none yet (the projection starts at `fromBlock`).
     */
    projectedBlock: p.bigint('number').nullable(),
    status: p.enum(CHAIN_CONTRACT_STATUSES).default('active'),
    suspendedReason: p.string().length(500).nullable(),
    suspendedAt: p.datetime().nullable(),
    name: p.string().nullable(),
    symbol: p.string().nullable(),
    decimals: p.integer().nullable(),
    createdBy: p.string().length(32),
    createdAt: p.datetime(),
  },
  uniques: [{ properties: ['chainId', 'address'] }],
});
export type ChainContract = InferEntity<typeof ChainContract>;

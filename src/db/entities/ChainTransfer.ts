import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Uint256Type } from '../types/uint256.ts';
import { ChainContract } from './ChainContract.ts';

export const CHAIN_TRANSFER_STATUSES = ['pending', 'confirmed'] as const;

/**
 * One token movement read from a `Transfer`, `TransferSingle` or `TransferBatch` log (one row per
 * id of a batch, `batchIndex`). Mints come from, burns go to, the zero address. `pending` until the
 * block has its chain's confirmations; deleted (and its holdings reverted) if a reorg drops it, with a
 * ChainTransferRemoval row when its `chainTransferPending` event was published (`announced`).
 */
export const ChainTransfer = defineEntity({
  name: 'ChainTransfer',
  properties: {
    id: bigintAutoincrementId(),
    contract: () => p.manyToOne(ChainContract).ref().index(),
    blockNumber: p.bigint('number').index(),
    blockHash: p.string().length(66),
    txHash: p.string().length(66),
    logIndex: p.integer(),
    batchIndex: p.integer(),
    /** Decimal token id; empty for ERC-20. */
    tokenId: p.string().length(78),
    from: p.string().length(42).index(),
    to: p.string().length(42).index(),
    amount: p.type(Uint256Type),
    status: p.enum(CHAIN_TRANSFER_STATUSES),
    /**
     * Its `chainTransferPending` event is in the outbox (src/chain/announce.ts). Rows read when their
     * block was already confirmed are never announced (false for ever: only `newTransfer` follows).
     */
    announced: p.boolean().default(false),
    createdAt: p.datetime(),
  },
  uniques: [{ properties: ['contract', 'txHash', 'logIndex', 'batchIndex'] }],
});
export type ChainTransfer = InferEntity<typeof ChainTransfer>;

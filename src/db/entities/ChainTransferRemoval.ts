import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Uint256Type } from '../types/uint256.ts';
import { ChainContract } from './ChainContract.ts';

/**
 * A pending chain transfer a reorg dropped after its `chainTransferPending` event was published:
 * written by the rollback in the same transaction that deletes the transfer, deleted once its
 * `chainTransferRemoved` event is in the outbox (src/chain/announce.ts). So a crash between the two
 * loses no removal and publishes none twice.
 */
export const ChainTransferRemoval = defineEntity({
  name: 'ChainTransferRemoval',
  properties: {
    id: bigintAutoincrementId(),
    contract: () => p.manyToOne(ChainContract).ref().index(),
    blockNumber: p.bigint('number'),
    blockHash: p.string().length(66),
    txHash: p.string().length(66),
    logIndex: p.integer(),
    batchIndex: p.integer(),
    tokenId: p.string().length(78),
    from: p.string().length(42),
    to: p.string().length(42),
    amount: p.type(Uint256Type),
    /** The highest block both branches share: everything above it was rolled back. */
    forkBlock: p.bigint('number'),
    removedAt: p.datetime(),
  },
});
export type ChainTransferRemoval = InferEntity<typeof ChainTransferRemoval>;

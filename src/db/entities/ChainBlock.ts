import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';

/**
 * The hash of a block the indexer read, kept while the block is in the unconfirmed window: the
 * highest one is compared with the node's on every step, and a mismatch walks down these to the fork
 * point (src/chain/indexer.ts).
 */
export const ChainBlock = defineEntity({
  name: 'ChainBlock',
  properties: {
    id: bigintAutoincrementId(),
    chainId: p.integer(),
    number: p.bigint('number'),
    hash: p.string().length(66),
  },
  uniques: [{ properties: ['chainId', 'number'] }],
});
export type ChainBlock = InferEntity<typeof ChainBlock>;

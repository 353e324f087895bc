import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Uint256Type } from '../types/uint256.ts';
import { ChainContract } from './ChainContract.ts';

/**
 * What an address holds of one token of a registered contract, as indexed (pending transfers
 * included). Every address, not only wallets known to the service. Rows at zero are deleted.
 */
export const ChainHolding = defineEntity({
  name: 'ChainHolding',
  properties: {
    id: bigintAutoincrementId(),
    contract: () => p.manyToOne(ChainContract).ref(),
    /** Decimal token id; empty for ERC-20. */
    tokenId: p.string().length(78),
    /** Lowercase address. */
    address: p.string().length(42).index(),
    balance: p.type(Uint256Type),
    updatedAt: p.datetime(),
  },
  uniques: [{ properties: ['contract', 'tokenId', 'address'] }],
});
export type ChainHolding = InferEntity<typeof ChainHolding>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Uint256Type } from '../types/uint256.ts';
import { Asset } from './Asset.ts';

/** How much of an asset a wallet holds (1 for an owned NFT). */
export const Holding = defineEntity({
  name: 'Holding',
  properties: {
    id: bigintAutoincrementId(),
    /** Lowercase address. Not a foreign key: wallets unknown to the service can receive assets. */
    wallet: p.string().length(42).index(),
    asset: () => p.manyToOne(Asset).ref().index(),
    balance: p.type(Uint256Type),
    updatedAt: p.datetime(),
  },
  uniques: [{ properties: ['wallet', 'asset'] }],
});
export type Holding = InferEntity<typeof Holding>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Uint256Type } from '../types/uint256.ts';
import { Asset } from './Asset.ts';

/** How much of an asset a wallet holds (1 for an owned NFT), and how much of it is reserved. */
export const Holding = defineEntity({
  name: 'Holding',
  properties: {
    id: bigintAutoincrementId(),
    /**
     * Lowercase address. Not a foreign key: wallets unknown to the service can receive assets. No
     * index of its own: the unique `(wallet, asset)` serves every read by wallet (the listings walk it
     * in asset order), and a second index was only bytes and a random page written per new holding
     * (issue 34).
     */
    wallet: p.string().length(42),
    asset: () => p.manyToOne(Asset).ref().index(),
    balance: p.type(Uint256Type),
    /**
     * The part of `balance` reserved (issue 35: an open offer's price, an auction's escrowed item or
     * bid): still held, never spendable. A `holds` guard sees `balance - reserved`; the store keeps
     * `0 <= reserved <= balance`.
     */
    reserved: p.type(Uint256Type).default('0'),
    updatedAt: p.datetime(),
  },
  uniques: [{ properties: ['wallet', 'asset'] }],
});
export type Holding = InferEntity<typeof Holding>;

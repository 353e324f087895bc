import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ChainContract } from './ChainContract.ts';

/**
 * The chain side of an on-chain token's ledger asset (src/chain/projection.ts): which contract and
 * token id the asset `assetId` (`chn_` + hash of `caip19`) mirrors. Written before the asset itself
 * and never changed; the asset views read `caip19` (src/domain/ledger/asset-rows.ts) and derive the
 * asset's `source` from it.
 */
export const ChainAsset = defineEntity({
  name: 'ChainAsset',
  properties: {
    assetId: p.string().length(32).primary(),
    contract: () => p.manyToOne(ChainContract).ref().index(),
    /** Decimal token id; empty for ERC-20. */
    tokenId: p.string().length(78),
    caip19: p.string().length(200),
  },
});
export type ChainAsset = InferEntity<typeof ChainAsset>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ChainContract } from './ChainContract.ts';

/**
 * The chain side of an on-chain token's ledger asset (src/chain/projection.ts): which contract and
 * token id the asset `assetId` (`chn_` + hash of `caip19`) mirrors. Written before the asset itself;
 * its contract and token never change; the asset views read `caip19` (src/domain/ledger/asset-rows.ts) and derive the
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
    /**
     * The token's metadata as the fetcher read it (src/chain/metadata.ts), in the asset's
     * AssetMetadata shape plus `name`/`description`; null until fetched (or when it failed).
     */
    metadata: p.json<Record<string, unknown>>().nullable(),
    /**
     * `pending` (queued, or due again at `metadataRetryAt`), `fetched`, or `failed` (why in
     * `metadataError`; tried again at `metadataRetryAt` when the failure may pass, final when that
     * is null); null while never queued.
     */
    metadataStatus: p.string().length(16).nullable(),
    metadataError: p.string().length(500).nullable(),
    /** Fetches tried (src/chain/metadata.ts gives up after a few). */
    metadataAttempts: p.integer().default(0),
    /** When a pending or retryable token is due, or the end of a fetcher's claim on it. */
    metadataRetryAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['metadataStatus', 'metadataRetryAt'] }],
});
export type ChainAsset = InferEntity<typeof ChainAsset>;

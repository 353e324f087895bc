// On-chain tokens in the ledger (issue 20): their ids and the rule that the ledger never moves them.
// An on-chain token's asset id is `chn_` + 26 Crockford base32 characters, the first 130 bits of the
// SHA-256 of its CAIP-19 id: a CAIP-19 id (`eip155:1/erc721:0x…/7`) is longer than an asset id's 32
// characters and holds `/` and `:`, so the id is a deterministic, URL-safe mapping of it and the
// CAIP-19 id itself is the asset's `source.caip19` (chain_asset, src/chain/projection.ts). Ledger ids
// (`nft_` + ULID, lowercase slugs) never start with `chn_`, so the id alone says where an asset lives.
import { createHash } from 'node:crypto';
import { ConflictError } from '../errors.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** 26 Crockford base32 characters from the first 130 bits of SHA-256(`text`). */
export function hashId26(text: string): string {
  const digest = createHash('sha256').update(text).digest();
  let bits = 0n;
  for (let i = 0; i < 17; i++) bits = (bits << 8n) | BigInt(digest[i] as number);
  bits >>= 6n; // 136 bits read, 130 kept
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(bits & 31n)] + out;
    bits >>= 5n;
  }
  return out;
}

/** How an on-chain token's asset id starts (no ledger id does). */
export const CHAIN_ASSET_PREFIX = 'chn_';

/** The asset id of the on-chain token whose CAIP-19 id is `caip19`. */
export function chainAssetId(caip19: string): string {
  return `${CHAIN_ASSET_PREFIX}${hashId26(caip19)}`;
}

/** True for the id of an on-chain token (made by `chainAssetId`). */
export function isChainAssetId(assetId: string): boolean {
  return assetId.startsWith(CHAIN_ASSET_PREFIX);
}

/** 409: the ledger mirrors on-chain tokens and never moves, mints or burns them itself. */
export class AssetOnChainError extends ConflictError {
  constructor(assetId: string) {
    super(
      `${assetId} is an on-chain token (see its source.caip19): it moves on its chain, not through the ledger.`,
      '/problems/asset-on-chain',
    );
  }
}

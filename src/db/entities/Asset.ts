import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';
import { Collection } from './Collection.ts';
import { User } from './User.ts';

export const ASSET_KINDS = ['nft', 'fungible'] as const;

/** An NFT (`nft_` + ULID, one owner) or a fungible currency (a slug such as `gold`; its supply is in AssetSupply). */
export const Asset = defineEntity({
  name: 'Asset',
  // Issue 37: a wallet's own history (`GET /api/v1/transfers?wallet=`, src/db/transfer-history.ts)
  // walks the NFTs minted to it backwards from the cursor, as it walks its transfers.
  indexes: [{ properties: ['mintedTo', 'mintSeq'] }],
  properties: {
    id: p.string().length(32).primary(),
    /**
     * Cursor order for listings. Drawn by the ledger store from the `asset` counter (see
     * ../sequences.ts), which hands out values in commit order on both databases.
     */
    seq: p.bigint('number').unique(),
    kind: p.enum(ASSET_KINDS),
    name: p.string(),
    description: p.text().nullable(),
    metadata: p.json<Record<string, unknown>>(),
    collection: () => p.manyToOne(Collection).ref().index(),
    /**
     * Not indexed: no read selects assets by creator, and users are never deleted (issue 34: bytes).
     * `index(false)`: MikroORM would otherwise index every foreign key on SQLite.
     */
    creator: () => p.manyToOne(User).ref().index(false),
    symbol: p.string().nullable(),
    decimals: p.integer().nullable(),
    maxSupply: p.type(Uint256Type).nullable(),
    /** Current holder of an NFT (lowercase address); null for currencies, whose holders are in Holding. */
    owner: p.string().length(42).nullable().index(),
    /** Frozen by its studio: does not move (transfers, trades, crafts) and does not burn. */
    frozen: p.boolean().default(false),
    /** Who froze it (a user id; null while not frozen): only that party's role level or an admin unfreezes. */
    frozenBy: p.string().nullable(),
    /** Non-transferable (an achievement, a quest item); its collection may say so for every NFT. */
    soulbound: p.boolean().default(false),
    /** The newest version in asset_metadata_version (0: the metadata it was created with). */
    metadataVersion: p.integer().default(0),
    /**
     * Issue 36, items that expire: the NFT's end time (null: none). At it the market keeper returns a
     * lent NFT to its `lender` or burns any other (src/domain/ledger/expiries.ts); from it on the item
     * never moves (the store's `movable` and `burnable` guards compare it with the plan's time).
     * Indexed: the sweep reads the due items in end-time order.
     */
    expiresAt: p.datetime().nullable().index(),
    /** The wallet that lent the NFT until `expiresAt` (a rental; null otherwise): it comes back to it. */
    lender: p.string().length(42).nullable(),
    /**
     * Issue 37: the wallet a ledger NFT (`nft_`) was minted to, whose mint writes no transfer row
     * (null for currencies and on-chain tokens, whose mints are transfer rows). Never changes.
     */
    mintedTo: p.string().length(42).nullable(),
    /**
     * Issue 37: where that mint sorts in a wallet's history: a value of the transfers' `seq` counter,
     * drawn by the ledger store with the asset row, so it sorts among the transfers exactly and pages
     * with their cursor (NFTs minted before Migration20261129143100 have negative values: below every
     * transfer, in mint order). Null with `mintedTo`.
     */
    mintSeq: p.bigint('number').nullable(),
    createdAt: p.datetime(),
  },
});
export type Asset = InferEntity<typeof Asset>;

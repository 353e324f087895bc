import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';
import { Asset } from './Asset.ts';
import { User } from './User.ts';

export const TRANSFER_STATUSES = ['pending', 'completed', 'failed'] as const;

/** A move of an asset between two wallets; a mint comes from the zero address. */
export const Transfer = defineEntity({
  name: 'Transfer',
  // The histories (`GET /api/v1/transfers?wallet=` / `?assetId=`, src/domain/ledger/transfers.ts):
  // each filter walks its index backwards from the cursor and stops after the page (issue 34).
  indexes: [
    { properties: ['fromAddress', 'seq'] },
    { properties: ['toAddress', 'seq'] },
    { properties: ['asset', 'seq'] },
  ],
  properties: {
    id: p.string().primary(),
    /** Cursor order for histories: drawn by the ledger store (see ../sequences.ts). */
    seq: p.bigint('number').unique(),
    /**
     * `index(false)`: the `(asset_id, seq)` index above serves every read by asset and the foreign
     * key's checks; MikroORM would otherwise add a single-column one on SQLite (issue 34: bytes).
     */
    asset: () => p.manyToOne(Asset).ref().index(false),
    fromAddress: p.string().length(42),
    toAddress: p.string().length(42),
    amount: p.type(Uint256Type),
    status: p.enum(TRANSFER_STATUSES),
    /** A problem type URI when failed. */
    failureReason: p.string().nullable(),
    /**
     * Not indexed: no read selects transfers by requester, and users are never deleted (issue 34: bytes).
     * `index(false)`: MikroORM would otherwise index every foreign key on SQLite.
     */
    requestedBy: () => p.manyToOne(User).ref().nullable().index(false),
    createdAt: p.datetime(),
    completedAt: p.datetime().nullable(),
  },
});
export type Transfer = InferEntity<typeof Transfer>;

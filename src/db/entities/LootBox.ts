import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';

/** One entry of a drop table as stored: its weight and outcome (the contract's DropOutcome). */
export interface DropEntry {
  weight: number;
  outcome: components['schemas']['DropOutcome'];
}

/**
 * A drop table of a collection (issue 36, src/domain/ledger/loot-box-definitions.ts): weighted outcomes,
 * immutable once created (a draw names it by id and `hash`, hex SHA-256 of the entries' RFC 8785
 * form). Configuration, like a recipe.
 */
export const DropTable = defineEntity({
  name: 'DropTable',
  properties: {
    /** `dtb_` + a ULID. */
    id: p.string().length(32).primary(),
    collectionId: p.string(),
    name: p.string(),
    entries: p.json<DropEntry[]>(),
    hash: p.string().length(64),
    createdBy: p.string(),
    createdAt: p.datetime(),
  },
});
export type DropTable = InferEntity<typeof DropTable>;

/**
 * A loot box: every NFT of `collectionId` named `name` opens by a draw from `tableId`; with pity,
 * the table's entry `pityEntry` is guaranteed at a wallet's `pityAfter`-th opening without it.
 * Immutable once created.
 */
export const LootBox = defineEntity({
  name: 'LootBox',
  uniques: [{ properties: ['collectionId', 'name'] }],
  properties: {
    /** `lbx_` + a ULID: boxes list in creation order by id. */
    id: p.string().length(32).primary(),
    collectionId: p.string(),
    name: p.string(),
    tableId: p.string().length(32),
    paid: p.boolean(),
    pityAfter: p.integer().nullable(),
    pityEntry: p.integer().nullable(),
    createdBy: p.string(),
    createdAt: p.datetime(),
  },
});
export type LootBox = InferEntity<typeof LootBox>;

/** A wallet's openings of a box since it last got the pity entry; written by openings only. */
export const LootBoxPity = defineEntity({
  name: 'LootBoxPity',
  properties: {
    boxId: p.string().length(32).primary(),
    wallet: p.string().length(42).primary(),
    count: p.integer(),
  },
});
export type LootBoxPity = InferEntity<typeof LootBoxPity>;

/**
 * A server seed of a wallet's draws (commit-reveal): `commitment` = hex SHA-256 of the 32-byte
 * secret, published while `active`; the secret is kept sealed (src/crypto/secret-box.ts) until the
 * wallet reveals it, then `serverSeed` is public. `activeKey` is the wallet while active, null after:
 * its unique index keeps one active seed per wallet. Openings take nonces 0, 1, ... in order
 * (`nextNonce`, advanced only by an opening's plan, guarded by `seedAt`).
 */
export const DrawSeed = defineEntity({
  name: 'DrawSeed',
  indexes: [{ properties: ['wallet', 'id'] }],
  properties: {
    /** `dsd_` + a ULID. */
    id: p.string().length(32).primary(),
    wallet: p.string().length(42),
    activeKey: p.string().length(42).nullable().unique(),
    status: p.string().length(16).$type<'active' | 'revealed'>(),
    commitment: p.string().length(64),
    sealedSeed: p.text(),
    serverSeed: p.string().length(64).nullable(),
    nextNonce: p.integer(),
    createdAt: p.datetime(),
    revealedAt: p.datetime().nullable(),
  },
});
export type DrawSeed = InferEntity<typeof DrawSeed>;

/**
 * A loot box opening (its id is the operation's `op_` id): the contract's Draw as answered in
 * `data`; (seed_id, nonce) is unique, so no nonce of a seed is ever used twice.
 */
export const DrawRecord = defineEntity({
  name: 'DrawRecord',
  tableName: 'draw',
  uniques: [{ properties: ['seedId', 'nonce'] }],
  indexes: [{ properties: ['wallet', 'id'] }],
  properties: {
    id: p.string().length(32).primary(),
    boxId: p.string().length(32),
    assetId: p.string().length(32),
    wallet: p.string().length(42),
    seedId: p.string().length(32),
    nonce: p.integer(),
    data: p.json<components['schemas']['Draw']>(),
    createdAt: p.datetime(),
  },
});
export type DrawRecord = InferEntity<typeof DrawRecord>;

// Asset columns read as raw rows (through ../../db/read-statements.ts) and turned into the fields an
// asset's view is made of, exactly as the ORM would hydrate them.
import type { ReadStatements } from '../../db/sqlite-read-statements.ts';
import { CHAIN_ASSET_PREFIX } from './chain-assets.ts';
import type { AssetFields, FixedAssetFields } from './views.ts';

/**
 * The columns of `asset` (aliased `a`) that `fixedAssetFieldsOf` reads, each with its name in a
 * FixedAssetRow: all but those a write changes without a new metadata version (owner, the supply,
 * frozen, frozen_by); whether its collection is soulbound; and an on-chain token's CAIP-19 id (a
 * primary-key lookup in chain_asset, null for a ledger asset: its `source`).
 */
const FIXED_ASSET_SELECT: readonly (readonly [keyof FixedAssetRow, string])[] = [
  ['id', 'a.id'],
  ['kind', 'a.kind'],
  ['name', 'a.name'],
  ['description', 'a.description'],
  ['metadata', 'a.metadata'],
  ['collection_id', 'a.collection_id'],
  ['symbol', 'a.symbol'],
  ['decimals', 'a.decimals'],
  ['max_supply', 'a.max_supply'],
  ['created_at', 'a.created_at'],
  ['soulbound', 'a.soulbound'],
  ['metadata_version', 'a.metadata_version'],
  ['collection_soulbound', '(select c.soulbound from collection c where c.id = a.collection_id)'],
  // Looked up for on-chain tokens' ids only: a ledger asset's read skips the probe of chain_asset's key.
  [
    'caip19',
    `case when substr(a.id, 1, ${CHAIN_ASSET_PREFIX.length}) = '${CHAIN_ASSET_PREFIX}' then (select ca.caip19 from chain_asset ca where ca.asset_id = a.id) end`,
  ],
];

/** FIXED_ASSET_SELECT as a select list, each value under its FixedAssetRow name. */
export const FIXED_ASSET_COLUMNS = FIXED_ASSET_SELECT.map(([name, sql]) =>
  sql === `a.${name}` ? sql : `${sql} as ${name}`,
).join(', ');

/** The FixedAssetRow in `values` (a row read as an array) from `offset` on, in FIXED_ASSET_COLUMNS' order. */
export function fixedAssetRowAt(values: readonly unknown[], offset: number): FixedAssetRow {
  const row: Record<string, unknown> = {};
  for (const [index, [name]] of FIXED_ASSET_SELECT.entries()) row[name] = values[offset + index];
  return row as unknown as FixedAssetRow;
}

/**
 * A currency's total supply, beside its asset (aliased `a`), under the column's old name: it lives in
 * `asset_supply` (issue 34 item 5: mints and burns do not update the asset row); null for an NFT, whose
 * read skips the probe of asset_supply's key (an NFT has no row there).
 */
export const TOTAL_SUPPLY_COLUMN =
  "case when a.kind = 'fungible' then (select s.total_supply from asset_supply s where s.asset_id = a.id) end as total_supply";

/** The columns of `asset` (aliased `a`) that `assetFieldsOf` reads. */
export const ASSET_COLUMNS = `${FIXED_ASSET_COLUMNS}, a.owner, ${TOTAL_SUPPLY_COLUMN}, a.frozen, a.frozen_by, a.expires_at, a.lender`;

/**
 * A row of FIXED_ASSET_COLUMNS as both databases return it: amounts as digits (text or numeric),
 * booleans as 0/1 or true/false, dates and JSON as their driver gives them (read through the
 * statements' `date` and `json`).
 */
export interface FixedAssetRow {
  id: string;
  kind: AssetFields['kind'];
  name: string;
  description: string | null;
  metadata: unknown;
  collection_id: string;
  symbol: string | null;
  decimals: number | string | null;
  max_supply: unknown;
  created_at: unknown;
  soulbound: unknown;
  metadata_version: number | string | null;
  collection_soulbound: unknown;
  caip19: string | null;
}

/** A row of ASSET_COLUMNS. */
export interface AssetRow extends FixedAssetRow {
  owner: string | null;
  total_supply: unknown;
  frozen: unknown;
  frozen_by: string | null;
  expires_at: unknown;
  lender: string | null;
}

/** Amount columns come back as digits (zero-padded text on SQLite, numeric text on PostgreSQL). */
export function amountOf(value: unknown): bigint {
  return BigInt(String(value));
}

function amountOrNull(value: unknown): bigint | null {
  return value == null ? null : amountOf(value);
}

export function assetFieldsOf(row: AssetRow, statements: ReadStatements): AssetFields {
  return {
    ...fixedAssetFieldsOf(row, statements),
    owner: row.owner ?? null,
    totalSupply: amountOrNull(row.total_supply),
    // Booleans come back as 0/1 on SQLite, true/false on PostgreSQL.
    frozen: Boolean(row.frozen),
    frozenBy: row.frozen_by ?? null,
    // Issue 36: items that expire.
    expiresAt: row.expires_at == null ? null : statements.date(row.expires_at),
    lender: row.lender ?? null,
  };
}

export function fixedAssetFieldsOf(row: FixedAssetRow, statements: ReadStatements): FixedAssetFields {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    description: row.description ?? null,
    metadata: statements.json(row.metadata) as Record<string, unknown>,
    collection: { id: row.collection_id },
    symbol: row.symbol ?? null,
    decimals: row.decimals == null ? null : Number(row.decimals),
    maxSupply: amountOrNull(row.max_supply),
    createdAt: statements.date(row.created_at),
    caip19: row.caip19 ?? null,
    soulbound: Boolean(row.soulbound) || Boolean(row.collection_soulbound),
    metadataVersion: Number(row.metadata_version ?? 0),
  };
}

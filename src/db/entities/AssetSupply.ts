import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';
import { Asset } from './Asset.ts';

/**
 * A currency's total supply, one row per currency (NFTs have none), apart from its `asset` row
 * (issue 34 item 5, Migration20261129190000_asset_supply): every mint and burn updates this narrow
 * row, never the asset's, so the asset row that every transfer of the currency looks up twice (the
 * movable guard, the transfer row's foreign-key check) gets no new versions and no new index entries.
 * Written by the ledger stores only (raw SQL); read by the asset reads as a scalar subquery
 * (src/domain/ledger/asset-rows.ts). Declared here so the schema diff knows the table.
 */
export const AssetSupply = defineEntity({
  name: 'AssetSupply',
  properties: {
    /** `index(false)`: the primary key is its index (MikroORM would add another on SQLite). */
    asset: () => p.manyToOne(Asset).ref().primary().index(false),
    totalSupply: p.type(Uint256Type),
  },
});
export type AssetSupply = InferEntity<typeof AssetSupply>;

// Read side of the ledger: what a wallet holds, who holds an asset, everything in a user's wallets.
// Holdings are public ledger data (like a chain explorer). Zero rows are kept by the write side and
// filtered out here. Pages are keyed on immutable values: asset id, wallet address.
import type { FilterQuery } from '@mikro-orm/core';
import { Asset } from '../../db/entities/Asset.ts';
import { Holding } from '../../db/entities/Holding.ts';
import type { Orm } from '../../db/orm.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAddress } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { decodeCursor, isString, isStringPair, type Page, page } from './cursor.ts';
import { type AssetView, assetView, decimalsOf } from './views.ts';
import type { WalletService } from './wallets.ts';

export interface HoldingFilters {
  kind?: 'nft' | 'fungible';
  collection?: string;
  limit: number;
  cursor?: string;
}

export interface WalletAssetsPage extends Page<{ asset: AssetView; balance: string }> {
  wallet: string;
}

export interface AssetOwnersPage extends Page<{ wallet: string; balance: string }> {
  assetId: string;
}

export interface HoldingLists {
  walletAssets(wallet: StoredAddress, filters: HoldingFilters): Promise<WalletAssetsPage>;
  assetOwners(assetId: string, options: { limit: number; cursor?: string }): Promise<AssetOwnersPage>;
  userAssets(
    userId: string,
    filters: HoldingFilters,
  ): Promise<Page<{ wallet: string; asset: AssetView; balance: string }>>;
}

function assetFilter(filters: HoldingFilters): { kind?: 'nft' | 'fungible'; collection?: string } {
  return {
    ...(filters.kind ? { kind: filters.kind } : {}),
    ...(filters.collection ? { collection: filters.collection } : {}),
  };
}

function holdingView(holding: Holding): { asset: AssetView; balance: string } {
  const asset = holding.asset.getEntity();
  return { asset: assetView(asset), balance: formatAmount(holding.balance as bigint, decimalsOf(asset)) };
}

export function createHoldingLists(orm: Orm, wallets: WalletService): HoldingLists {
  return {
    async walletAssets(wallet, filters) {
      const after = decodeCursor(filters.cursor, 'wallet-assets', isString);
      const rows = await orm.em.fork().find(
        Holding,
        {
          wallet,
          balance: { $gt: 0n },
          asset: { ...assetFilter(filters), ...(after === undefined ? {} : { id: { $gt: after } }) },
        },
        { populate: ['asset'], orderBy: { asset: { id: 'asc' } }, limit: filters.limit + 1 },
      );
      const result = page(rows, filters.limit, 'wallet-assets', (row) => row.asset.id);
      return {
        wallet: formatAddress(wallet),
        data: result.data.map(holdingView),
        next_cursor: result.next_cursor,
      };
    },

    async assetOwners(assetId, { limit, cursor }) {
      const after = decodeCursor(cursor, 'asset-owners', isString);
      const em = orm.em.fork();
      const asset = await em.findOne(Asset, { id: assetId });
      if (!asset) throw assetNotFound(assetId);
      const rows = await em.find(
        Holding,
        { asset: assetId, balance: { $gt: 0n }, ...(after === undefined ? {} : { wallet: { $gt: after } }) },
        { orderBy: { wallet: 'asc' }, limit: limit + 1 },
      );
      const result = page(rows, limit, 'asset-owners', (row) => row.wallet);
      const decimals = decimalsOf(asset);
      return {
        assetId,
        data: result.data.map((row) => ({
          wallet: formatAddress(row.wallet),
          balance: formatAmount(row.balance as bigint, decimals),
        })),
        next_cursor: result.next_cursor,
      };
    },

    async userAssets(userId, filters) {
      const after = decodeCursor(filters.cursor, 'my-assets', isStringPair);
      const em = orm.em.fork();
      const mine = await wallets.controlledAddresses(em, userId);
      if (mine.length === 0) return { data: [], next_cursor: null };
      const position: FilterQuery<Holding> =
        after === undefined
          ? {}
          : { $or: [{ wallet: { $gt: after[0] } }, { wallet: after[0], asset: { $gt: after[1] } }] };
      const rows = await em.find(
        Holding,
        { $and: [{ wallet: { $in: mine }, balance: { $gt: 0n }, asset: assetFilter(filters) }, position] },
        {
          populate: ['asset'],
          orderBy: [{ wallet: 'asc' }, { asset: { id: 'asc' } }],
          limit: filters.limit + 1,
        },
      );
      const result = page(rows, filters.limit, 'my-assets', (row) => [row.wallet, row.asset.id]);
      return {
        data: result.data.map((row) => ({ wallet: formatAddress(row.wallet), ...holdingView(row) })),
        next_cursor: result.next_cursor,
      };
    },
  };
}

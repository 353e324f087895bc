// Read side of the ledger: what a wallet holds, who holds an asset, everything in a user's wallets.
// Holdings are public ledger data (like a chain explorer). Zero rows are kept by the write side and
// filtered out here. Pages are keyed on immutable values: asset id, wallet address.
// The wallet listings are the hottest reads: they select the columns their views need in one joined
// query and build the views from the rows, without entities (no hydration, no identity map).
import type { EntityManager } from '@mikro-orm/sql';
import { Asset } from '../../db/entities/Asset.ts';
import { Holding } from '../../db/entities/Holding.ts';
import type { Orm } from '../../db/orm.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAddress } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { decodeCursor, isString, isStringPair, type Page, page } from './cursor.ts';
import { type AssetFields, type AssetView, assetView, decimalsOf } from './views.ts';
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

/** Conditions on the joined asset (alias `a`). */
function assetFilter(filters: HoldingFilters): Record<string, unknown> {
  return {
    ...(filters.kind ? { 'a.kind': filters.kind } : {}),
    ...(filters.collection ? { 'a.collection': filters.collection } : {}),
  };
}

/** One holding with its asset, as the listings read it. */
interface HoldingRow {
  wallet: StoredAddress;
  balance: bigint;
  asset: AssetFields;
}

const HOLDING_COLUMNS = [
  'h.wallet',
  'h.balance',
  'a.id',
  'a.kind',
  'a.name',
  'a.description',
  'a.metadata',
  'a.collection',
  'a.owner',
  'a.symbol',
  'a.decimals',
  'a.totalSupply',
  'a.maxSupply',
  'a.createdAt',
];

/** Amount columns come back as digits (zero-padded text on SQLite, numeric on PostgreSQL). */
function amountOrNull(value: unknown): bigint | null {
  return value == null ? null : BigInt(String(value));
}

/**
 * Positive holdings matching `where` (holding `h`, asset `a`), in `orderBy` order. Raw rows are
 * converted as the ORM would: dates through the platform's parser, JSON parsed when the driver
 * returns text (SQLite).
 */
async function readHoldings(
  em: EntityManager,
  where: Record<string, unknown>,
  orderBy: Record<string, 'asc'>[],
  limit: number,
): Promise<HoldingRow[]> {
  const platform = em.getPlatform();
  // Alias paths (`a.kind`) are valid here but beyond the builder's static types: hence `never`.
  const rows = await em
    .createQueryBuilder(Holding, 'h')
    .select(HOLDING_COLUMNS as never)
    .join('h.asset', 'a')
    .where({ $and: [{ balance: { $gt: 0n } }, where] } as never)
    .orderBy(orderBy as never)
    .limit(limit)
    .execute<Record<string, unknown>[]>('all', false);
  return rows.map((row) => ({
    wallet: row.wallet as StoredAddress,
    balance: BigInt(String(row.balance)),
    asset: {
      id: row.id as string,
      kind: row.kind as AssetFields['kind'],
      name: row.name as string,
      description: (row.description as string | null) ?? null,
      metadata: (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata) as Record<
        string,
        unknown
      >,
      collection: { id: row.collection_id as string },
      owner: (row.owner as string | null) ?? null,
      symbol: (row.symbol as string | null) ?? null,
      decimals: (row.decimals as number | null) ?? null,
      totalSupply: amountOrNull(row.total_supply),
      maxSupply: amountOrNull(row.max_supply),
      createdAt: platform.parseDate(row.created_at as string) as Date,
    },
  }));
}

function holdingView(row: HoldingRow): { asset: AssetView; balance: string } {
  return { asset: assetView(row.asset), balance: formatAmount(row.balance, decimalsOf(row.asset)) };
}

export function createHoldingLists(orm: Orm, wallets: WalletService): HoldingLists {
  return {
    async walletAssets(wallet, filters) {
      const after = decodeCursor(filters.cursor, 'wallet-assets', isString);
      const rows = await readHoldings(
        orm.em.fork(),
        { wallet, ...assetFilter(filters), ...(after === undefined ? {} : { 'a.id': { $gt: after } }) },
        [{ 'a.id': 'asc' }],
        filters.limit + 1,
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
      const position =
        after === undefined
          ? {}
          : { $or: [{ wallet: { $gt: after[0] } }, { wallet: after[0], 'a.id': { $gt: after[1] } }] };
      const rows = await readHoldings(
        em,
        { $and: [{ wallet: { $in: mine }, ...assetFilter(filters) }, position] },
        [{ 'h.wallet': 'asc' }, { 'a.id': 'asc' }],
        filters.limit + 1,
      );
      const result = page(rows, filters.limit, 'my-assets', (row) => [row.wallet, row.asset.id]);
      return {
        data: result.data.map((row) => ({ wallet: formatAddress(row.wallet), ...holdingView(row) })),
        next_cursor: result.next_cursor,
      };
    },
  };
}

// The holdings listings over read statements: what a wallet holds, everything in a user's wallets.
// Holdings are public ledger data (like a chain explorer). Zero rows are kept by the write side and
// filtered out here. Pages are keyed on immutable values: asset id, wallet address.
// The wallet listings are the hottest reads: one prepared statement each (../../db/read-statements.ts)
// selecting the columns their views need, views built from the rows (no entities, no query builder).
// A listing reads each holding's balance and its asset's changing fields (`owner`, `total_supply`,
// `frozen`, `metadata_version`) every time; the fields that change only with a new metadata version
// (name, metadata, decimals, ...: views.ts, FixedAssetFields) are read once per asset version and
// kept, already shaped as their part of the view, so a listing answered from the database
// (`Cache-Control: no-cache` included) reads what can change and nothing else: a narrower statement,
// no metadata to parse, no dates or CAIP-19 ids to format.
// Nothing here needs the ORM: on SQLite these listings run on a thread of their own (holding-thread.ts)
// over its own read-only connection, on PostgreSQL on the event loop over the ORM's pool.
import type { ReadStatements } from '../../db/sqlite-read-statements.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAddress } from './addresses.ts';
import { formatUnits } from './amounts.ts';
import { FIXED_ASSET_COLUMNS, fixedAssetFieldsOf } from './asset-rows.ts';
import { decodeCursor, isString, isStringPair, type Page, page } from './cursor.ts';
import { type AssetView, assetViewOf, type FixedAssetView, fixedAssetView } from './views.ts';

export interface HoldingFilters {
  kind?: 'nft' | 'fungible';
  collection?: string;
  limit: number;
  cursor?: string;
}

/** Issue 36: the timed part of a currency holding, by end time (absent when none). */
type Expiring = { expiring?: { amount: string; expiresAt: string }[] };

export interface WalletAssetsPage extends Page<{ asset: AssetView; balance: string } & Expiring> {
  wallet: string;
}

export type UserAssetsPage = Page<{ wallet: string; asset: AssetView; balance: string } & Expiring>;

export interface HoldingReads {
  walletAssets(wallet: StoredAddress, filters: HoldingFilters): Promise<WalletAssetsPage>;
  userAssets(userId: string, filters: HoldingFilters): Promise<UserAssetsPage>;
  /** The lowercase addresses of every wallet the user controls (custodial and linked). */
  userWallets(userId: string): Promise<StoredAddress[]>;
}

/** One holding as the listings read it: the asset's changing fields beside it. */
interface HoldingRow {
  wallet: StoredAddress;
  assetId: string;
  /** Base units as the column stores them (digits; zero-padded on SQLite). */
  balance: string;
  owner: string | null;
  totalSupply: string | null;
  frozen: boolean;
  frozenBy: string | null;
  /** Issue 36: the item's end time and lender. */
  expiresAt: Date | null;
  lender: string | null;
  /** The asset's metadata version: a kept fixed view of another version is read again. */
  version: number;
}

/**
 * The listings' one statement: positive holdings (`h`) joined to their asset (`a`), with `conditions`
 * (SQL with `?` placeholders, bound to `parameters`) in `order`. Each combination of filters is its
 * own SQL text, hence its own prepared statement: a handful per listing. Of the asset, only what
 * changes (the rest is kept by `fixedAssets`).
 */
export function holdingsSql(conditions: string[], order: string): string {
  return (
    'select h.wallet, h.asset_id, h.balance, a.owner, a.total_supply, a.frozen, a.frozen_by, a.metadata_version, ' +
    'a.expires_at, a.lender ' +
    'from holding h ' +
    `join asset a on a.id = h.asset_id where h.balance > ? and ${conditions.join(' and ')} order by ${order} limit ?`
  );
}

/** Most assets whose fixed views are kept (past it the oldest go first): a few hundred bytes each. */
const FIXED_ASSETS_KEPT = 10_000;

/**
 * The fixed part of assets' views (FixedAssetView), read from the database once per asset version and
 * kept: a write of the service changes it only with a new `metadata_version`, which every listing row
 * carries. A commit by another process on the SQLite file (an admin script editing rows:
 * `externalCommits`, `PRAGMA data_version` on the service's writing connection, looked at at most once
 * a millisecond, as the read cache does) drops them all.
 */
function fixedAssets(statements: ReadStatements, externalCommits: () => number) {
  const kept = new Map<string, FixedAssetView>();
  const sql = `select ${FIXED_ASSET_COLUMNS} from asset a where a.id = ?`;
  let seen = externalCommits();
  let checkedAt = performance.now();
  return {
    /** Drops what was kept if another process committed to the database since the last look. */
    check(): void {
      const now = performance.now();
      if (now - checkedAt < 1) return;
      checkedAt = now;
      const latest = externalCommits();
      if (latest !== seen) {
        seen = latest;
        kept.clear();
      }
    },
    /**
     * The asset's fixed view if it is kept for `version` (a map lookup: no promise on the hot path).
     * A metadata update writes a new version, so a view kept by this or any other instance before it
     * is never served after it.
     */
    kept(assetId: string, version: number): FixedAssetView | undefined {
      const view = kept.get(assetId);
      return view?.metadataVersion === version ? view : undefined;
    },
    async read(assetId: string): Promise<FixedAssetView> {
      const [row] = await statements.all(sql, [assetId]);
      // The holding that names it was read first, and assets are never deleted.
      if (!row) throw new Error(`asset ${assetId} of a holding was not found`);
      // Shared by every answer that shows the asset from now on: frozen, so none can alter another's.
      const view = deepFreeze(fixedAssetView(fixedAssetFieldsOf(row, statements)));
      if (kept.size >= FIXED_ASSETS_KEPT) kept.delete(kept.keys().next().value as string);
      kept.set(assetId, view);
      return view;
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** The kind and collection filters, on the joined asset. */
function assetFilter(filters: HoldingFilters, conditions: string[], parameters: unknown[]): void {
  if (filters.kind) {
    conditions.push('a.kind = ?');
    parameters.push(filters.kind);
  }
  if (filters.collection) {
    conditions.push('a.collection_id = ?');
    parameters.push(filters.collection);
  }
}

/**
 * The listings over `statements`. `zero`: a zero balance as the balance column stores it
 * (zero-padded text on SQLite); `externalCommits`: a number that changes when another process
 * commits to the database (() => 0 where none can: PostgreSQL).
 */
export function createHoldingReads(
  statements: ReadStatements,
  zero: unknown,
  externalCommits: () => number,
): HoldingReads {
  const assets = fixedAssets(statements, externalCommits);
  /** The SQL text of each combination of conditions and order, built once. */
  const sqlTexts = new Map<string, string>();

  async function readHoldings(
    conditions: string[],
    order: string,
    parameters: unknown[],
  ): Promise<HoldingRow[]> {
    assets.check();
    const shape = `${conditions.join(' and ')} order by ${order}`;
    let sql = sqlTexts.get(shape);
    if (sql === undefined) {
      sql = holdingsSql(conditions, order);
      sqlTexts.set(shape, sql);
    }
    const rows = await statements.arrays(sql, [zero, ...parameters]);
    // In holdingsSql's select order.
    return rows.map(
      ([wallet, assetId, balance, owner, totalSupply, frozen, frozenBy, version, expiresAt, lender]) => ({
        wallet: wallet as StoredAddress,
        assetId: assetId as string,
        balance: String(balance),
        owner: (owner as string | null) ?? null,
        totalSupply: totalSupply == null ? null : String(totalSupply),
        // Booleans come back as 0/1 on SQLite, true/false on PostgreSQL.
        frozen: Boolean(frozen),
        frozenBy: (frozenBy as string | null) ?? null,
        version: Number(version),
        expiresAt: expiresAt == null ? null : statements.date(expiresAt),
        lender: (lender as string | null) ?? null,
      }),
    );
  }

  /**
   * Issue 36: the lots (timed currency units) of the listed holdings, as stored (one past its end
   * shows until the sweep burns it, as its balance does), keyed by wallet and asset: one statement
   * for the page, on the lots' (wallet, asset_id, expires_at) index; none for a page of NFTs only.
   */
  async function lotsOf(
    rows: HoldingRow[],
    fixed: FixedAssetView[],
  ): Promise<Map<string, { amount: string; expiresAt: string }[]>> {
    const lots = new Map<string, { amount: string; expiresAt: string }[]>();
    const wanted = new Set(
      rows
        .filter((_, index) => fixed[index].kind === 'fungible')
        .map((row) => `${row.wallet} ${row.assetId}`),
    );
    if (wanted.size === 0) return lots;
    const wallets = [...new Set(rows.map((row) => row.wallet))];
    const found = await statements.arrays(
      `select wallet, asset_id, amount, expires_at from currency_lot where wallet in (${wallets.map(() => '?').join(', ')}) order by wallet, asset_id, expires_at`,
      wallets,
    );
    const summed = new Map<string, Map<number, bigint>>();
    for (const [wallet, assetId, amount, expiresAt] of found) {
      const key = `${wallet} ${assetId}`;
      if (!wanted.has(key)) continue;
      const byEnd = summed.get(key) ?? new Map<number, bigint>();
      const end = statements.date(expiresAt).getTime();
      byEnd.set(end, (byEnd.get(end) ?? 0n) + BigInt(String(amount)));
      summed.set(key, byEnd);
    }
    const decimalsOf = new Map(rows.map((row, index) => [row.assetId, fixed[index].decimals ?? 0]));
    for (const [key, byEnd] of summed) {
      const decimals = decimalsOf.get(key.slice(key.indexOf(' ') + 1)) ?? 0;
      lots.set(
        key,
        [...byEnd].map(([end, units]) => ({
          amount: formatUnits(String(units), decimals),
          expiresAt: new Date(end).toISOString(),
        })),
      );
    }
    return lots;
  }

  /** The holdings' views: each asset's fixed part (kept, or read once) and what was just read. */
  async function holdingViews(
    rows: HoldingRow[],
  ): Promise<({ asset: AssetView; balance: string } & Expiring)[]> {
    const fixed: FixedAssetView[] = [];
    // A promise only for an asset not kept yet.
    for (const row of rows)
      fixed.push(assets.kept(row.assetId, row.version) ?? (await assets.read(row.assetId)));
    const lots = await lotsOf(rows, fixed);
    return rows.map((row, index) => {
      const decimals = fixed[index].decimals ?? 0;
      const totalSupply = row.totalSupply === null ? null : formatUnits(row.totalSupply, decimals);
      const expiring = lots.get(`${row.wallet} ${row.assetId}`);
      return {
        asset: assetViewOf(fixed[index], row.owner, totalSupply, row.frozen, row.frozenBy, row),
        balance: formatUnits(row.balance, decimals),
        ...(expiring && { expiring }),
      };
    });
  }

  return {
    async walletAssets(wallet, filters) {
      const after = decodeCursor(filters.cursor, 'wallet-assets', isString);
      const conditions = ['h.wallet = ?'];
      const parameters: unknown[] = [wallet];
      assetFilter(filters, conditions, parameters);
      // On the holding's (wallet, asset_id) index: no sort, the cursor a range of it.
      if (after !== undefined) {
        conditions.push('h.asset_id > ?');
        parameters.push(after);
      }
      parameters.push(filters.limit + 1);
      const rows = await readHoldings(conditions, 'h.asset_id', parameters);
      const result = page(rows, filters.limit, 'wallet-assets', (row) => row.assetId);
      const data = await holdingViews(result.data);
      return { wallet: formatAddress(wallet), data, next_cursor: result.next_cursor };
    },

    async userAssets(userId, filters) {
      const after = decodeCursor(filters.cursor, 'my-assets', isStringPair);
      // The wallets the user controls (custodial and linked), in the same statement.
      const conditions = ['h.wallet in (select address from wallet where user_id = ?)'];
      const parameters: unknown[] = [userId];
      assetFilter(filters, conditions, parameters);
      if (after !== undefined) {
        conditions.push('(h.wallet > ? or (h.wallet = ? and h.asset_id > ?))');
        parameters.push(after[0], after[0], after[1]);
      }
      parameters.push(filters.limit + 1);
      const rows = await readHoldings(conditions, 'h.wallet, h.asset_id', parameters);
      const result = page(rows, filters.limit, 'my-assets', (row) => [row.wallet, row.assetId]);
      const views = await holdingViews(result.data);
      const data = result.data.map((row, index) => ({ wallet: formatAddress(row.wallet), ...views[index] }));
      return { data, next_cursor: result.next_cursor };
    },

    async userWallets(userId) {
      const rows = await statements.all('select address from wallet where user_id = ?', [userId]);
      return rows.map((row) => row.address as StoredAddress);
    },
  };
}

/** A holdings listing asked of `createHoldingReads`' listings as a JSON answer (holdingListing). */
export type ListingRequest =
  | { op: 'walletAssets'; wallet: StoredAddress; filters: HoldingFilters }
  | { op: 'userAssets'; userId: string; filters: HoldingFilters };

/** A listing's answer: its JSON (UTF-8, what goes on the wire) and what it shows. */
export interface HoldingListing {
  body: Buffer;
  /** The ids of the assets it lists. */
  assetIds: string[];
  /** userAssets: every wallet the user controls, holding or not (a transfer into one changes it). */
  wallets: StoredAddress[];
}

/** The JSON answer of a listing (the page the contract declares, serialized) and what it shows. */
export async function holdingListing(reads: HoldingReads, request: ListingRequest): Promise<HoldingListing> {
  const [listed, wallets] =
    request.op === 'walletAssets'
      ? [await reads.walletAssets(request.wallet, request.filters), []]
      : await Promise.all([
          reads.userAssets(request.userId, request.filters),
          reads.userWallets(request.userId),
        ]);
  return {
    body: Buffer.from(JSON.stringify(listed), 'utf8'),
    assetIds: listed.data.map((holding) => holding.asset.id),
    wallets,
  };
}

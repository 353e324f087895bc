// The holdings listings of both adapters: on PostgreSQL on the event loop, on SQLite on the event loop
// and on the adapter's thread alike (./sqlite/worker.ts). A listing reads each holding's balance and
// its asset's changing fields (`owner`, `total_supply` from asset_supply, `frozen`, `metadata_version`, ...) every
// time; the fields that change only with a new metadata version (name, metadata, decimals, ...:
// ../views.ts, FixedAssetFields) are read once per asset version and kept, already shaped as their
// part of the view (./fixed-views.ts: one cache per adapter and per thread), so a listing answered
// from the database (`Cache-Control: no-cache` included) reads what can change and nothing else: a
// narrower statement, no metadata to parse, no dates or CAIP-19 ids to format.
//
// Unless most assets listed lately were not kept (a ledger of many more assets than are kept, read
// at random): the narrow statement would then be followed by a second one for the fixed columns of
// most of its assets, a second round trip that cost as much as the listing itself (PostgreSQL,
// in-process, a page of 10 with none kept: 402-596 µs of CPU, 275-320 in one statement). Past
// WIDE_ABOVE of the rows listed lately, a listing reads the fixed columns in its own statement
// instead (the wide statement: about 1.45 times the narrow one's cost, client and server, when all
// were kept; about 0.6 times the two statements' when none was).
import type { ReadStatements } from '../../../db/sqlite-read-statements.ts';
import { formatAddress, type StoredAddress } from '../addresses.ts';
import { formatUnits } from '../amounts.ts';
import {
  FIXED_ASSET_COLUMNS,
  type FixedAssetRow,
  fixedAssetRowAt,
  TOTAL_SUPPLY_COLUMN,
} from '../asset-rows.ts';
import { decodeCursor, isString, isStringPair, page } from '../cursor.ts';
import { type AssetView, assetViewOf, type FixedAssetView } from '../views.ts';
import { fixedViews } from './fixed-views.ts';
import type { Expiring, HoldingFilters, HoldingReads } from './port.ts';
import { userWallets } from './queries.ts';

/** The columns of a listing's row before the fixed ones of the wide statement (`listingSql`). */
const LISTED_COLUMNS = 11;

/**
 * Above this share of recently listed rows whose asset's fixed view was not kept, listings read the
 * wide statement. Measured on PostgreSQL (one wallet's 20 holdings, client and server CPU per
 * listing): narrow ~180 µs, plus ~265 µs for the second statement when all missed; wide ~265 µs.
 */
const WIDE_ABOVE = 0.25;

/** The weight of the newest listing in that share (an exponentially weighted mean, ~16 listings). */
const SHARE_WEIGHT = 1 / 16;

/**
 * Whether the holding has lots (timed units: issue 36), a probe of the lots' (wallet, asset_id,
 * expires_at) index per currency row (an NFT has none), so that a page whose holdings have none (most)
 * needs no second statement for them (`lotsOf`).
 */
const HAS_LOTS =
  "case when a.kind = 'fungible' then exists (select 1 from currency_lot l where l.wallet = h.wallet and l.asset_id = h.asset_id) else false end";

/**
 * A listing's one statement: positive holdings (`h`) joined to their asset (`a`), with `conditions`
 * (SQL with `?` placeholders) in `order`. Each combination of filters is its own SQL text, hence its
 * own prepared statement: a handful per listing. Of the asset, only what changes (the rest is kept:
 * ./fixed-views.ts), and with `wide` its fixed columns too (FIXED_ASSET_COLUMNS, from column
 * LISTED_COLUMNS on). Bound to a zero balance as the column stores it, then the conditions'
 * parameters, then the limit.
 */
export function listingSql(conditions: readonly string[], order: string, wide = false): string {
  return (
    `select h.wallet, h.asset_id, h.balance, a.owner, ${TOTAL_SUPPLY_COLUMN}, a.frozen, a.frozen_by, a.metadata_version, ` +
    `a.expires_at, a.lender, ${HAS_LOTS}${wide ? `, ${FIXED_ASSET_COLUMNS}` : ''} from holding h ` +
    `join asset a on a.id = h.asset_id where h.balance > ? and ${conditions.join(' and ')} order by ${order} limit ?`
  );
}

/** One holding as a listing reads it: the asset's changing fields beside it. */
interface ListedRow {
  wallet: StoredAddress;
  assetId: string;
  /** Base units as the column stores them (digits; zero-padded on SQLite). */
  balance: string;
  owner: string | null;
  totalSupply: string | null;
  frozen: boolean;
  frozenBy: string | null;
  /** The asset's metadata version: a kept fixed view of another version is read again. */
  version: number;
  /** Issue 36: the item's end time and lender. */
  expiresAt: Date | null;
  lender: string | null;
  /** Whether lots of the holding exist (HAS_LOTS). */
  hasLots: boolean;
  /** The asset's fixed columns, read by the wide statement. */
  fixed?: FixedAssetRow;
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
 * (zero-padded text on SQLite); `externalCommits`: a number that changes when another process commits
 * to the database (the kept fixed views are then dropped; () => 0 where none can: PostgreSQL).
 * `viewsKept`: the most fixed views kept (ASSET_VIEW_CACHE_ENTRIES); `wideAbove`: the share of rows
 * not kept above which listings read the wide statement (tests set -1, always, or Infinity, never).
 */
export function listingReads(
  statements: ReadStatements,
  zero: unknown,
  externalCommits: () => number,
  { viewsKept, wideAbove = WIDE_ABOVE }: { viewsKept?: number; wideAbove?: number } = {},
): HoldingReads {
  const assets = fixedViews(statements, externalCommits, viewsKept);
  /** The SQL text of each combination of conditions, order and width, built once. */
  const sqlTexts = new Map<string, string>();
  /** The share of recently listed rows whose fixed view was not kept (SHARE_WEIGHT). */
  let notKept = 0;

  async function readHoldings(
    conditions: string[],
    order: string,
    parameters: unknown[],
  ): Promise<ListedRow[]> {
    assets.check();
    const wide = notKept > wideAbove;
    const shape = `${conditions.join(' and ')} order by ${order}${wide ? ' wide' : ''}`;
    let sql = sqlTexts.get(shape);
    if (sql === undefined) {
      sql = listingSql(conditions, order, wide);
      sqlTexts.set(shape, sql);
    }
    const rows = await statements.arrays(sql, [zero, ...parameters]);
    // In listingSql's select order.
    return rows.map((values) => {
      const [
        wallet,
        assetId,
        balance,
        owner,
        totalSupply,
        frozen,
        frozenBy,
        version,
        expiresAt,
        lender,
        hasLots,
      ] = values;
      return {
        wallet: String(wallet) as StoredAddress,
        assetId: String(assetId),
        balance: String(balance),
        owner: owner == null ? null : String(owner),
        totalSupply: totalSupply == null ? null : String(totalSupply),
        // Booleans come back as 0/1 on SQLite, true/false on PostgreSQL.
        frozen: Boolean(frozen),
        frozenBy: frozenBy == null ? null : String(frozenBy),
        version: Number(version),
        expiresAt: expiresAt == null ? null : statements.date(expiresAt),
        lender: lender == null ? null : String(lender),
        hasLots: Boolean(hasLots),
        ...(wide && { fixed: fixedAssetRowAt(values, LISTED_COLUMNS) }),
      };
    });
  }

  /**
   * Issue 36: the lots (timed currency units) of the listed holdings, as stored (one past its end
   * shows until the sweep burns it, as its balance does), keyed by wallet and asset: one statement
   * for the page, on the lots' (wallet, asset_id, expires_at) index; none for a page without lots.
   */
  async function lotsOf(
    rows: ListedRow[],
    fixed: FixedAssetView[],
  ): Promise<Map<string, { amount: string; expiresAt: string }[]>> {
    const lots = new Map<string, { amount: string; expiresAt: string }[]>();
    const holding = rows.filter((row) => row.hasLots);
    if (holding.length === 0) return lots;
    const wanted = new Set(holding.map((row) => `${row.wallet} ${row.assetId}`));
    const wallets = [...new Set(holding.map((row) => row.wallet))];
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

  const NONE_READ: ReadonlyMap<string, FixedAssetView> = new Map();
  /** The holdings' views: each asset's fixed part (kept, or read once) and what was just read. */
  async function holdingViews(
    rows: ListedRow[],
  ): Promise<({ asset: AssetView; balance: string } & Expiring)[]> {
    const found = rows.map((row) => assets.kept(row.assetId, row.version));
    // Assets not kept: from the wide statement's row, else all of them in one more statement.
    const missing = new Set<string>();
    let notFound = 0;
    for (const [index, row] of rows.entries()) {
      if (found[index] !== undefined) continue;
      notFound++;
      if (row.fixed) found[index] = assets.kept(row.assetId, row.version) ?? assets.admit(row.fixed);
      else missing.add(row.assetId);
    }
    if (rows.length > 0) notKept += SHARE_WEIGHT * (notFound / rows.length - notKept);
    const read = missing.size === 0 ? NONE_READ : await assets.read([...missing]);
    const fixed: FixedAssetView[] = rows.map(
      (row, index) => found[index] ?? (read.get(row.assetId) as FixedAssetView),
    );
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

    userWallets: (userId) => userWallets(statements, userId),
  };
}

// The holdings listings of both adapters: on PostgreSQL on the event loop, on SQLite on the event loop
// and on the adapter's thread alike (./sqlite/worker.ts). A listing reads each holding's balance and
// its asset's changing fields (`owner`, `total_supply`, `frozen`, `metadata_version`, ...) every
// time; the fields that change only with a new metadata version (name, metadata, decimals, ...:
// ../views.ts, FixedAssetFields) are read once per asset version and kept, already shaped as their
// part of the view (./fixed-views.ts: one cache per adapter and per thread), so a listing answered
// from the database (`Cache-Control: no-cache` included) reads what can change and nothing else: a
// narrower statement, no metadata to parse, no dates or CAIP-19 ids to format.
import type { ReadStatements } from '../../../db/sqlite-read-statements.ts';
import type { StoredAddress } from '../addresses.ts';
import { formatUnits } from '../amounts.ts';
import { type AssetView, assetViewOf, type FixedAssetView } from '../views.ts';
import { fixedViews } from './fixed-views.ts';
import type { HoldingReads } from './port.ts';
import { type HoldingRow, holdingReads, holdingsSql, userWallets } from './queries.ts';

/** The asset's columns a listing reads every time (in this order, after the holding's three). */
const CHANGING_COLUMNS =
  'a.owner, a.total_supply, a.frozen, a.frozen_by, a.metadata_version, a.expires_at, a.lender';

/** A listing's statement with `conditions` in `order` (./queries.ts, holdingsSql). */
export function listingSql(conditions: readonly string[], order: string): string {
  return holdingsSql(CHANGING_COLUMNS, conditions, order);
}

/** One holding as the listings read it: the asset's changing fields beside it. */
interface ListedRow extends HoldingRow {
  owner: string | null;
  totalSupply: string | null;
  frozen: boolean;
  frozenBy: string | null;
  /** The asset's metadata version: a kept fixed view of another version is read again. */
  version: number;
  /** Issue 36: the item's end time and lender. */
  expiresAt: Date | null;
  lender: string | null;
}

/**
 * The listings over `statements`. `zero`: a zero balance as the balance column stores it
 * (zero-padded text on SQLite); `externalCommits`: a number that changes when another process commits
 * to the database (the kept fixed views are then dropped; () => 0 where none can: PostgreSQL).
 */
export function listingReads(
  statements: ReadStatements,
  zero: unknown,
  externalCommits: () => number,
): HoldingReads {
  const assets = fixedViews(statements, externalCommits);
  /** The SQL text of each combination of conditions and order, built once. */
  const sqlTexts = new Map<string, string>();

  return holdingReads<ListedRow>({
    async rows(conditions, order, parameters) {
      assets.check();
      const shape = `${conditions.join(' and ')} order by ${order}`;
      let sql = sqlTexts.get(shape);
      if (sql === undefined) {
        sql = listingSql(conditions, order);
        sqlTexts.set(shape, sql);
      }
      const rows = await statements.arrays(sql, [zero, ...parameters]);
      // In the select's order.
      return rows.map(
        ([wallet, assetId, balance, owner, totalSupply, frozen, frozenBy, version, expiresAt, lender]) => ({
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
        }),
      );
    },

    /** The holdings' views: each asset's fixed part (kept, or read once) and what was just read. */
    async views(rows) {
      const fixed: FixedAssetView[] = [];
      // A promise only for an asset not kept yet.
      for (const row of rows)
        fixed.push(assets.kept(row.assetId, row.version) ?? (await assets.read(row.assetId)));
      return rows.map((row, index): { asset: AssetView; balance: string } => {
        const decimals = fixed[index].decimals ?? 0;
        const totalSupply = row.totalSupply === null ? null : formatUnits(row.totalSupply, decimals);
        return {
          asset: assetViewOf(fixed[index], row.owner, totalSupply, row.frozen, row.frozenBy, row),
          balance: formatUnits(row.balance, decimals),
        };
      });
    },

    userWallets: (userId) => userWallets(statements, userId),
  });
}

// The listings' fixed-view cache (./holdings.ts): the fixed part of assets' views (../views.ts,
// FixedAssetView), read from the database once per asset version and kept, one cache per adapter and
// per thread that lists (on SQLite the event loop's and the adapter thread's). A write of the service changes that part only
// with a new `metadata_version`, which every listing row carries. A commit by another process on a
// SQLite file (an admin script editing rows: `externalCommits`, `PRAGMA data_version` on the service's
// writing connection, looked at at most once a millisecond, as the read cache does) drops them all.
import { LRUCache } from 'lru-cache';
import type { ReadStatements } from '../../../db/sqlite-read-statements.ts';
import { FIXED_ASSET_COLUMNS, type FixedAssetRow, fixedAssetFieldsOf } from '../asset-rows.ts';
import { type FixedAssetView, fixedAssetView } from '../views.ts';

/**
 * Most assets whose fixed views are kept unless configured (ASSET_VIEW_CACHE_ENTRIES; past it the
 * least recently used go first, in constant time: a Map's oldest-first eviction walks the holes its
 * deletions leave, ~7 µs each at this size): about 750 bytes each.
 */
const FIXED_ASSETS_KEPT = 10_000;

/**
 * The statement reading the fixed columns of up to `slots` assets at once. Its id list is padded to a power of
 * two (the last id repeated): a handful of statement texts, each prepared once.
 */
export function fixedViewsSql(slots: number): string {
  return `select ${FIXED_ASSET_COLUMNS} from asset a where a.id in (${Array(slots).fill('?').join(', ')})`;
}

/**
 * `most`: the views kept; also the most ids of assets seen once and not kept (`admit`'s doorkeeper),
 * cleared when full: an asset read again within about that many misses is kept.
 */
export function fixedViews(
  statements: ReadStatements,
  externalCommits: () => number,
  most = FIXED_ASSETS_KEPT,
) {
  const kept = new LRUCache<string, FixedAssetView>({ max: most });
  /** The read's statement text by its number of id slots. */
  const texts = new Map<number, string>();
  let seen = externalCommits();
  let checkedAt = performance.now();
  /** Ids of assets whose view `admit` built once without keeping it (at most `most`). */
  const seenOnce = new Set<string>();
  /** The fixed view of an asset row, kept from now on. */
  function keep(row: FixedAssetRow): FixedAssetView {
    // Shared by every answer that shows the asset from now on: frozen, so none can alter another's.
    const view = deepFreeze(fixedAssetView(fixedAssetFieldsOf(row, statements)));
    kept.set(row.id, view);
    return view;
  }

  return {
    keep,
    /**
     * The fixed view of an asset row the listing read anyway (the wide statement), kept only the
     * second time it is seen lately (a doorkeeper, as TinyLFU admits). When most listed assets are
     * not kept (a ledger of many more assets than are kept, read at random), keeping each would evict
     * another kept one for a view unlikely to be asked for again before it goes in turn: the freeze, the
     * eviction and the collection of views that lived long enough to be promoted cost ~15 % of the
     * service's CPU per listing (PostgreSQL, in-process, pages of 5 holdings of random wallets among
     * 20,000). Assets listed again (a hot set) are kept from their second listing on.
     */
    admit(row: FixedAssetRow): FixedAssetView {
      if (seenOnce.delete(row.id)) return keep(row);
      if (seenOnce.size >= most) seenOnce.clear();
      seenOnce.add(row.id);
      // Used by one answer only: not frozen.
      return fixedAssetView(fixedAssetFieldsOf(row, statements));
    },
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
    /**
     * The fixed views of assets not kept (distinct ids), read in one statement and kept. On a large
     * ledger most assets of a listing are not kept: one round trip for all of them, not one each.
     */
    async read(assetIds: readonly string[]): Promise<Map<string, FixedAssetView>> {
      const views = new Map<string, FixedAssetView>();
      if (assetIds.length === 0) return views;
      let slots = 1;
      while (slots < assetIds.length) slots *= 2;
      let sql = texts.get(slots);
      if (sql === undefined) {
        sql = fixedViewsSql(slots);
        texts.set(slots, sql);
      }
      const parameters = [...assetIds];
      while (parameters.length < slots) parameters.push(assetIds[assetIds.length - 1]);
      for (const row of await statements.all<FixedAssetRow>(sql, parameters)) views.set(row.id, keep(row));
      // The holdings that name them were read first, and assets are never deleted.
      for (const id of assetIds)
        if (!views.has(id)) throw new Error(`asset ${id} of a holding was not found`);
      return views;
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

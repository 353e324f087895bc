// The page of a transfer history (`GET /api/v1/transfers`, newest first, from a cursor): the ids of
// the first `limit` transfers before `before` (by `seq`) that match the filters. Each branch has one
// equality on an index ending with `seq` (`transfer (from_address, seq)`, `(to_address, seq)`,
// `(asset_id, seq)`, or the unique `seq` alone) and is walked backwards from the cursor, stopped after
// `limit` rows; a wallet's history is two branches (the wallet as `from`, and as `to` but not `from`,
// so a transfer to oneself comes once), merged. A wallet and an asset together walk the wallet's
// branches and keep the asset's rows: they read rows they do not return (documented in
// docs/architecture/events.md, "Every read path's cost"). Read with the planner pinned
// (src/db/dialect.ts): on statistics older than the rows PostgreSQL chose a bitmap scan of every match
// and a sort.
import type { EntityManager } from '@mikro-orm/sql';
import { dialectOf } from './dialect.ts';

export interface TransferHistoryFilter {
  /** A stored (lowercase) address. */
  wallet?: string;
  assetId?: string;
  /** Only transfers with a smaller `seq` (the cursor). */
  before?: number;
  limit: number;
}

interface Branch {
  conditions: string[];
  params: unknown[];
}

export interface TransferHistoryQuery {
  sql: string;
  params: unknown[];
}

export function transferHistoryQuery({
  wallet,
  assetId,
  before,
  limit,
}: TransferHistoryFilter): TransferHistoryQuery {
  const common: Branch = { conditions: [], params: [] };
  const and = (condition: string, value: unknown) => {
    common.conditions.push(condition);
    common.params.push(value);
  };
  if (assetId !== undefined) and('asset_id = ?', assetId);
  if (before !== undefined) and('seq < ?', before);
  const branches: Branch[] =
    wallet === undefined
      ? [common]
      : [
          { conditions: ['from_address = ?', ...common.conditions], params: [wallet, ...common.params] },
          {
            conditions: ['to_address = ?', 'from_address <> ?', ...common.conditions],
            params: [wallet, wallet, ...common.params],
          },
        ];
  const selects = branches.map(({ conditions, params }) => ({
    sql: `select id, seq from transfer${conditions.length ? ` where ${conditions.join(' and ')}` : ''} order by seq desc limit ?`,
    params: [...params, limit],
  }));
  if (selects.length === 1) return selects[0];
  // Each branch in its own subquery keeps its ORDER BY and LIMIT; the outer ones merge them.
  return {
    sql: `${selects.map((select, index) => `select * from (${select.sql}) as b${index}`).join(' union all ')} order by seq desc limit ?`,
    params: [...selects.flatMap((select) => select.params), limit],
  };
}

/** The ids of the page, newest first. */
export async function transferHistoryIds(
  em: EntityManager,
  filter: TransferHistoryFilter,
): Promise<string[]> {
  const rows = await dialectOf(em).pinnedRead<{ id: string }>(em, transferHistoryQuery(filter));
  return rows.map((row) => row.id);
}

/**
 * Who sent an asset's first transfer (its oldest by `seq`; undefined: it never moved): one step of
 * the `(asset_id, seq)` index, pinned like the pages. An NFT's first sender is the wallet it was
 * minted to, as every change of an NFT's owner writes a transfer row (the leg writer's, an expiry's,
 * the chain projection's).
 */
export async function firstTransferSender(em: EntityManager, assetId: string): Promise<string | undefined> {
  const rows = await dialectOf(em).pinnedRead<{ from_address: string }>(em, {
    sql: 'select from_address from transfer where asset_id = ? order by seq asc limit 1',
    params: [assetId],
  });
  return rows[0]?.from_address;
}

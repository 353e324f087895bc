// The page of a transfer history (`GET /api/v1/transfers`, newest first, from a cursor): the first
// `limit` entries before `before` (by `seq`) that match the filters. Each branch has one equality on
// an index ending with `seq` (`transfer (from_address, seq)`, `(to_address, seq)`, `(asset_id, seq)`,
// or the unique `seq` alone) and is walked backwards from the cursor, stopped after `limit` rows; a
// wallet's history is two branches (the wallet as `from`, and as `to` but not `from`, so a transfer
// to oneself comes once), merged. Issue 37: a wallet's history (without an asset) has a third
// branch, the ledger NFTs minted to it, whose mints write no transfer row: `asset (minted_to,
// mint_seq)`, where `mint_seq` is a value of the transfers' counter drawn at the mint (see
// src/db/entities/Asset.ts), so the mints sort among the transfers and page with their cursor. A
// wallet and an asset together walk the wallet's transfer branches and keep the asset's rows: they
// read rows they do not return (documented in docs/architecture/events.md, "Every read path's
// cost"); an asset's history adds its NFT's mint itself (src/domain/ledger/transfers.ts). Read with
// the planner pinned (src/db/dialect.ts): on statistics older than the rows PostgreSQL chose a
// bitmap scan of every match and a sort.
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
  const where = (conditions: string[]) => (conditions.length ? ` where ${conditions.join(' and ')}` : '');
  const selects = branches.map(({ conditions, params }) => ({
    sql: `select id, seq, 0 as mint from transfer${where(conditions)} order by seq desc limit ?`,
    params: [...params, limit],
  }));
  if (wallet !== undefined && assetId === undefined) {
    const mints: Branch = { conditions: ['minted_to = ?'], params: [wallet] };
    if (before !== undefined) {
      mints.conditions.push('mint_seq < ?');
      mints.params.push(before);
    }
    selects.push({
      sql: `select id, mint_seq as seq, 1 as mint from asset${where(mints.conditions)} order by mint_seq desc limit ?`,
      params: [...mints.params, limit],
    });
  }
  if (selects.length === 1) return selects[0];
  // Each branch in its own subquery keeps its ORDER BY and LIMIT; the outer ones merge them.
  return {
    sql: `${selects.map((select, index) => `select * from (${select.sql}) as b${index}`).join(' union all ')} order by seq desc limit ?`,
    params: [...selects.flatMap((select) => select.params), limit],
  };
}

/**
 * One entry of a history's page: a transfer row (`id` its id), or (`mint`) the mint of the ledger
 * NFT `id`, which has no transfer row; `seq` is the entry's place in the history (its cursor).
 */
export interface TransferHistoryEntry {
  id: string;
  seq: number;
  mint: boolean;
}

/** The entries of the page, newest first. */
export async function transferHistoryEntries(
  em: EntityManager,
  filter: TransferHistoryFilter,
): Promise<TransferHistoryEntry[]> {
  const rows = await dialectOf(em).pinnedRead<{ id: string; seq: number | string; mint: number | string }>(
    em,
    transferHistoryQuery(filter),
  );
  return rows.map((row) => ({ id: row.id, seq: Number(row.seq), mint: Number(row.mint) === 1 }));
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

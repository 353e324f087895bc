// The wallet listing (`GET /wallets/{id}/assets`, src/domain/ledger/reads/holdings.ts) walks the
// holding's unique (wallet, asset_id) index in asset order on PostgreSQL whatever its statistics
// (issue 34): 200,000 holdings of 40,000 wallets written after the tables were analyzed empty,
// autovacuum off for them (as after a large airdrop). The statement is EXPLAINed as the service's
// prepared statement runs it, with a custom and with a generic plan: the holdings come from an index
// scan right under the LIMIT's nested loop, each asset from its primary key; no sequential scan, no
// bitmap scan, no sort. The `holding (wallet)` index is gone (Migration20261129010506): the unique
// index is the only one a wallet read can use. Whether a holding has lots (timed currency units,
// 200,000 of them also written after `currency_lot` was analyzed empty) is a probe of the lots'
// (wallet, asset_id, expires_at) index per listed row, never a scan of the lots. The assets of a
// page whose fixed views are not kept are read in one statement (./fixed-views.ts, `a.id in (...)`):
// from the primary key, never a scan; the wide listing (the fixed columns in the listing's own
// statement) has the narrow one's plan, and probes asset_supply and currency_lot for its currencies'
// rows only and chain_asset for on-chain tokens only (an NFT's row of a large ledger saved 4 to 6
// blocks).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import type { Orm } from '../../../src/db/orm.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { fixedViewsSql } from '../../../src/domain/ledger/reads/fixed-views.ts';
import { listingSql } from '../../../src/domain/ledger/reads/holdings.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';

const HOLDINGS = 200_000;
const WALLETS = 40_000;
const NFTS = 120_000;
const LOTS = 200_000;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/**
 * What is wrong with a listing's plan (empty when nothing). `ordered`: the index walked in order
 * under the LIMIT; otherwise the wallet's own holdings may be read whole and sorted (a filter on the
 * asset's columns: the cost is the wallet's holdings, never the ledger's), but only from the index.
 */
function planProblems(plan: PlanNode, ordered: boolean): string[] {
  const problems: string[] = [];
  for (const node of nodesOf(plan)) {
    if (ordered && node['Node Type'] === 'Sort') problems.push('Sort');
    if (/Seq Scan/.test(node['Node Type']) || (ordered && /Bitmap/.test(node['Node Type'])))
      problems.push(`${node['Node Type']} on ${node['Relation Name'] ?? 'an index'}`);
  }
  if (!JSON.stringify(plan).includes('holding_wallet_asset_id_unique'))
    problems.push('the holdings do not come from (wallet, asset_id)');
  if (!JSON.stringify(plan).includes('currency_lot_wallet_asset_id_expires_at_index'))
    problems.push('whether lots exist is not read from (wallet, asset_id, expires_at)');
  return problems;
}

describe.runIf(DB_KINDS.includes('postgres'))(
  'wallet listing plans on PostgreSQL, analyzed while empty',
  () => {
    let db: ScratchDatabase;
    let opened: Database;
    let orm: Orm;

    beforeAll(async () => {
      db = await migratedDatabase('postgres');
      opened = await openDatabase(db);
      orm = opened.orm;
      const connection = orm.em.getConnection();
      for (const table of ['holding', 'asset', 'currency_lot']) {
        await connection.execute(`alter table ${table} set (autovacuum_enabled = false)`);
        await connection.execute(`analyze ${table}`);
      }
      await connection.execute(
        "insert into users (id, username, username_normalized, password_hash, role, created_at) values ('usr_plans', 'plans', 'plans', 'x', 'studio', now())",
      );
      await connection.execute(
        "insert into collection (id, name, owner_id, created_at) values ('plans', 'Plans', 'usr_plans', now())",
      );
      // Two currencies held by every wallet, and NFTs of one owner each (3 per wallet for 40,000 wallets).
      await connection.execute(`
      insert into asset (id, seq, kind, name, metadata, collection_id, creator_id, symbol, decimals, owner, created_at)
      select 'cur-' || g, g, 'fungible', 'Coin', '{}'::jsonb, 'plans', 'usr_plans', 'C', 0, null, now() from generate_series(1, 2) g
      union all
      select 'nft-' || g, g + 2, 'nft', 'Item', '{}'::jsonb, 'plans', 'usr_plans', null, null,
             '0x' || lpad(to_hex(g % ${WALLETS}), 40, '0'), now() from generate_series(1, ${NFTS}) g`);
      await connection.execute(
        "insert into asset_supply (asset_id, total_supply) select 'cur-' || g, 0 from generate_series(1, 2) g",
      );
      await connection.execute(`
      insert into holding (wallet, asset_id, balance, updated_at)
      select '0x' || lpad(to_hex(g % ${WALLETS}), 40, '0'), 'cur-' || (1 + g / ${WALLETS}), 100, now()
      from generate_series(0, ${2 * WALLETS - 1}) g
      union all
      select '0x' || lpad(to_hex(g % ${WALLETS}), 40, '0'), 'nft-' || g, 1, now()
      from generate_series(1, ${HOLDINGS - 2 * WALLETS}) g`);
      // Timed units of the first currency in every wallet (issue 36), a lot per wallet and day.
      await connection.execute(`
      insert into currency_lot (id, asset_id, wallet, amount, expires_at, source_id, created_at)
      select 'lot-' || g, 'cur-1', '0x' || lpad(to_hex(g % ${WALLETS}), 40, '0'), 1,
             now() + (g / ${WALLETS}) * interval '1 day', 'src', now()
      from generate_series(0, ${LOTS - 1}) g`);
      const [{ count }] = await connection.execute<{ count: string }[]>(
        'select count(*) as count from holding',
      );
      expect(Number(count)).toBe(HOLDINGS);
    });

    afterAll(async () => {
      if (opened) await opened.close();
      await db?.drop();
    });

    /** The plans of `sql` (`?` placeholders) as a prepared statement runs it: custom, then generic. */
    async function explained(sql: string, values: readonly unknown[]): Promise<PlanNode[]> {
      let n = 0;
      const text = sql.replace(/\?/g, () => `$${++n}`);
      const connection = orm.em.getConnection();
      const plans: PlanNode[] = [];
      await connection.transactional(async (tx) => {
        await connection.execute(`prepare listing as ${text}`, [], 'run', tx);
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await connection.execute(`set local plan_cache_mode = ${mode}`, [], 'run', tx);
          const literals = values.map((value) => (typeof value === 'number' ? String(value) : `'${value}'`));
          const rows = await connection.execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
            `explain (format json) execute listing(${literals.join(', ')})`,
            [],
            'all',
            tx,
          );
          plans.push(rows[0]['QUERY PLAN'][0].Plan);
        }
        await connection.execute('deallocate listing', [], 'run', tx);
      });
      return plans;
    }

    const SHAPES: [name: string, conditions: string[], params: unknown[], ordered: boolean][] = [
      ['first page', ['h.wallet = ?'], [wallet(1_234)], true],
      ['after a cursor', ['h.wallet = ?', 'h.asset_id > ?'], [wallet(1_234), 'cur-2'], true],
      ['NFTs only', ['h.wallet = ?', 'a.kind = ?'], [wallet(1_234), 'nft'], false],
    ];

    it.each(SHAPES)(
      'reads %s from (wallet, asset_id), custom and generic plans alike, narrow and wide',
      async (_name, conditions, params, ordered) => {
        for (const wide of [false, true]) {
          // As walletAssets binds them: the zero balance first, the page size plus one last.
          const plans = await explained(listingSql(conditions, 'h.asset_id', wide), [0, ...params, 21]);
          for (const plan of plans) expect(planProblems(plan, ordered), JSON.stringify(plan)).toEqual([]);
        }
      },
    );

    it('probes the supply and the lots of its currencies only, and chain_asset for on-chain tokens only', async () => {
      // wallet(1,234) holds both currencies and 3 NFTs (ledger assets): as EXPLAIN ANALYZE runs it,
      // wide (every asset's fixed columns too), each probe's loops are the rows that need it.
      const values = [0, wallet(1_234), 21].map((value) =>
        typeof value === 'number' ? String(value) : `'${value}'`,
      );
      let n = 0;
      const sql = listingSql(['h.wallet = ?'], 'h.asset_id', true).replace(/\?/g, () => values[n++]);
      const rows = await orm.em
        .getConnection()
        .execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(`explain (analyze, format json) ${sql}`);
      const loops = (relation: string) =>
        nodesOf(rows[0]['QUERY PLAN'][0].Plan)
          .filter((node) => node['Relation Name'] === relation)
          .reduce((sum, node) => sum + (node['Actual Loops'] ?? 0), 0);
      expect(loops('holding')).toBe(1);
      expect(loops('asset')).toBe(5);
      expect(loops('asset_supply')).toBe(2);
      expect(loops('currency_lot')).toBe(2);
      expect(loops('chain_asset')).toBe(0);
    });

    it.each([1, 8, 32])('reads the fixed views of %i assets from the primary key', async (slots) => {
      const plans = await explained(
        fixedViewsSql(slots),
        Array.from({ length: slots }, (_, index) => `nft-${1 + index * 997}`),
      );
      for (const plan of plans) {
        const nodes = nodesOf(plan);
        expect(
          nodes.filter((node) => /Seq Scan/.test(node['Node Type'])),
          JSON.stringify(plan),
        ).toEqual([]);
        expect(JSON.stringify(plan)).toContain('asset_pkey');
      }
    });
  },
);

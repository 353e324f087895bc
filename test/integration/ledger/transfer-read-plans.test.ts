// The transfer histories (`GET /api/v1/transfers?wallet=` / `?assetId=`, src/db/transfer-history.ts)
// cost the page they return, not the wallet's or the asset's history (issue 34): 60,000 transfers of
// 600 wallets, most of them in one currency, written after the table was analyzed empty (autovacuum
// off for it, as after a large airdrop). Each page is the answer of the plain query it replaced, page
// after page, on both databases; on PostgreSQL every branch is an index scan right under its LIMIT
// (no sequential or bitmap scan, no sort but the merge of the branches), on SQLite every branch walks
// its `(…, seq)` index with no sort of its own. Before Migration20261129074128 the wallet filter was
// a bitmap OR of every transfer of the wallet, then a sort. Issue 37: a wallet's history also lists
// the NFTs minted to it (3,000 NFTs, their mints between the transfers: transfers take even `seq`s,
// mints odd `mint_seq`s), from the index `asset (minted_to, mint_seq)`.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { readPinned } from '../../../src/db/dialect.ts';
import type { Orm } from '../../../src/db/orm.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import {
  type TransferHistoryFilter,
  transferHistoryEntries,
  transferHistoryQuery,
} from '../../../src/db/transfer-history.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';
import { nodesOf, type PlanNode, pagePlanProblems } from '../../helpers/pg-plans.ts';

const TRANSFERS = 60_000;
const MINTS = 3_000;
const WALLETS = 600;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
/** A busy wallet (from and to in many transfers, one of them to itself), a quiet one, and nobody. */
const HOT = wallet(7);
const QUIET = wallet(599);

/** The filter shapes a history read takes. */
const SHAPES: [string, Omit<TransferHistoryFilter, 'limit' | 'before'>][] = [
  ['every transfer', {}],
  ['a wallet', { wallet: HOT }],
  ['a quiet wallet', { wallet: QUIET }],
  ['a currency', { assetId: 'cur-1' }],
  ['an NFT', { assetId: 'nft-3' }],
  ['a wallet and an asset', { wallet: HOT, assetId: 'nft-3' }],
];

/** The numbers 1..count as rows of `g`. */
const numbers = (kind: 'sqlite' | 'postgres', count: number) =>
  kind === 'postgres'
    ? `select g from generate_series(1, ${count}) g`
    : `with recursive s(g) as (select 1 union all select g + 1 from s where g < ${count}) select g from s`;
/** The address of wallet `expression`. */
const hex = (kind: 'sqlite' | 'postgres', expression: string) =>
  kind === 'postgres'
    ? `'0x' || lpad(to_hex(${expression}), 40, '0')`
    : `'0x' || substr('0000000000000000000000000000000000000000' || printf('%x', ${expression}), -40)`;
const nowOf = (kind: 'sqlite' | 'postgres') => (kind === 'postgres' ? 'now()' : `'2026-11-29T00:00:00.000Z'`);

/**
 * Transfers 1..TRANSFERS (`seq` 2g): from wallet g % WALLETS to wallet (7g + 1) % WALLETS (a few
 * to themselves); every 40th in one of 50 NFTs, the rest in the currency.
 */
function insertTransfers(kind: 'sqlite' | 'postgres'): string {
  const now = nowOf(kind);
  return `insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, created_at, completed_at)
    select 'trf-' || g, 2 * g, case when g % 40 = 0 then 'nft-' || ((g / 40) % 50) else 'cur-1' end,
      ${hex(kind, `g % ${WALLETS}`)}, ${hex(kind, `(7 * g + 1) % ${WALLETS}`)}, '1', 'completed', ${now}, ${now}
    from (${numbers(kind, TRANSFERS)}) numbers`;
}

/**
 * NFTs 1..MINTS minted in the ledger (issue 37): every 10th to HOT, the others to wallet
 * k % WALLETS; each mint's place `mint_seq` 38k + 1, odd, between the transfers.
 */
function insertMints(kind: 'sqlite' | 'postgres'): string {
  const now = nowOf(kind);
  return `insert into asset (id, seq, kind, name, metadata, collection_id, creator_id, owner, minted_to, mint_seq, created_at)
    select 'mnt-' || g, 100 + g, 'nft', 'Item', '{}', 'plans', 'usr_plans', 'x',
      case when g % 10 = 0 then '${HOT}' else ${hex(kind, `g % ${WALLETS}`)} end, 38 * g + 1, ${now}
    from (${numbers(kind, MINTS)}) numbers`;
}

/**
 * The plain query the history read replaced (one filter, every match sorted), with a wallet's NFT
 * mints (no asset filter) added to the matches (issue 37).
 */
function plainPage(filter: TransferHistoryFilter): { sql: string; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const and = (condition: string, ...values: unknown[]) => {
    conditions.push(condition);
    params.push(...values);
  };
  if (filter.wallet !== undefined) and('(from_address = ? or to_address = ?)', filter.wallet, filter.wallet);
  if (filter.assetId !== undefined) and('asset_id = ?', filter.assetId);
  if (filter.before !== undefined) and('seq < ?', filter.before);
  const transfers = `select id, seq from transfer${conditions.length ? ` where ${conditions.join(' and ')}` : ''}`;
  if (filter.wallet === undefined || filter.assetId !== undefined)
    return { sql: `${transfers} order by seq desc limit ?`, params: [...params, filter.limit] };
  const before = filter.before === undefined ? [] : [filter.before];
  return {
    sql: `select id from (${transfers} union all select id, mint_seq as seq from asset where minted_to = ?${before.length ? ' and mint_seq < ?' : ''}) as plain order by seq desc limit ?`,
    params: [...params, filter.wallet, ...before, filter.limit],
  };
}

const planProblems = (plan: PlanNode) => pagePlanProblems(plan, 'transfer');

describe.each(DB_KINDS)('transfer histories on %s', (kind) => {
  let db: ScratchDatabase;
  let opened: Database;
  let orm: Orm;
  const em = () => orm.em.fork() as unknown as EntityManager;

  beforeAll(async () => {
    db = await migratedDatabase(kind);
    opened = await openDatabase(db);
    orm = opened.orm;
    const connection = orm.em.getConnection();
    if (kind === 'postgres') {
      await connection.execute('alter table transfer set (autovacuum_enabled = false)');
      await connection.execute('analyze transfer');
    }
    const now = kind === 'postgres' ? 'now()' : `'2026-11-29T00:00:00.000Z'`;
    await connection.execute(
      `insert into users (id, username, username_normalized, password_hash, role, created_at) values ('usr_plans', 'plans', 'plans', 'x', 'studio', ${now})`,
    );
    await connection.execute(
      `insert into collection (id, name, owner_id, created_at) values ('plans', 'Plans', 'usr_plans', ${now})`,
    );
    const assets = [
      "('cur-1', 1, 'fungible')",
      ...Array.from({ length: 50 }, (_, n) => `('nft-${n}', ${n + 2}, 'nft')`),
    ].map((values) => values.replace(/\)$/, `, 'Item', '{}', 'plans', 'usr_plans', ${now})`));
    await connection.execute(
      `insert into asset (id, seq, kind, name, metadata, collection_id, creator_id, created_at) values ${assets.join(', ')}`,
    );
    // The currency's supply row (issue 34 item 5), as the stores write 0 (zero-padded text on SQLite).
    const zero = kind === 'sqlite' ? '0'.padStart(78, '0') : '0';
    await connection.execute(`insert into asset_supply (asset_id, total_supply) values ('cur-1', '${zero}')`);
    await connection.execute(insertTransfers(kind));
    await connection.execute(insertMints(kind));
    // A transfer to oneself: listed once in the wallet's history.
    await connection.execute(
      `insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, created_at, completed_at)
       values ('trf-self', ${2 * TRANSFERS + 1}, 'nft-3', '${HOT}', '${HOT}', '1', 'completed', ${now}, ${now})`,
    );
  });

  afterAll(async () => {
    await opened.close();
    await db.drop();
  });

  it.each(SHAPES)(
    'pages %s as the plain query does, newest first, each transfer once',
    async (_name, shape) => {
      for (const limit of [1, 20, 101]) {
        let before: number | undefined;
        for (let pageNumber = 0; pageNumber < 3; pageNumber++) {
          const filter = { ...shape, limit, before };
          const entries = await transferHistoryEntries(em(), filter);
          const ids = entries.map((entry) => entry.id);
          const plain = plainPage(filter);
          const expected = (await em().execute<{ id: string }[]>(plain.sql, plain.params)).map(
            (row) => row.id,
          );
          expect(ids, `${JSON.stringify(filter)}`).toEqual(expected);
          expect(new Set(ids).size).toBe(ids.length);
          // A mint is an entry of the history of the wallet it was minted to, and of no other.
          for (const entry of entries) expect(entry.mint).toBe(entry.id.startsWith('mnt-'));
          if (shape.wallet === undefined || shape.assetId !== undefined)
            expect(entries.filter((entry) => entry.mint)).toEqual([]);
          if (ids.length < limit) break;
          before = entries[entries.length - 1].seq;
        }
      }
      if (shape.wallet === HOT && shape.assetId === undefined) {
        expect((await transferHistoryEntries(em(), { ...shape, limit: 1 })).map((entry) => entry.id)).toEqual(
          ['trf-self'],
        );
        // Its mints come between its transfers: a page of 101 from the middle holds both.
        const middle = await transferHistoryEntries(em(), { ...shape, limit: 101, before: TRANSFERS });
        expect(middle.some((entry) => entry.mint) && middle.some((entry) => !entry.mint)).toBe(true);
      }
    },
  );

  it.runIf(kind === 'postgres')(
    'the plain query it replaced reads a wallet by bitmap and sorts (so the check below is worth something)',
    async () => {
      const plain = plainPage({ wallet: HOT, limit: 21 });
      const [row] = await em().execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
        `explain (format json) ${plain.sql}`,
        plain.params,
      );
      expect(planProblems(row['QUERY PLAN'][0].Plan)).not.toEqual([]);
    },
  );

  it.runIf(kind === 'postgres').each(SHAPES)(
    'reads %s on PostgreSQL from an index under each LIMIT, with no sort of a scan',
    async (_name, shape) => {
      for (const before of [undefined, TRANSFERS / 2]) {
        for (const limit of [21, 101]) {
          const read = transferHistoryQuery({ ...shape, limit, before });
          const [row] = await readPinned<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
            em(),
            read,
            'explain (format json) ',
          );
          const plan = row['QUERY PLAN'][0].Plan;
          expect(planProblems(plan), JSON.stringify(plan)).toEqual([]);
          // Issue 37: a wallet's history reads the NFTs minted to it from their index, as the transfers.
          expect(pagePlanProblems(plan, 'asset'), JSON.stringify(plan)).toEqual([]);
          const mintScans = nodesOf(plan).filter(({ node }) => node['Relation Name'] === 'asset');
          expect(
            mintScans.map(({ node }) => node['Index Name']),
            JSON.stringify(plan),
          ).toEqual(
            shape.wallet !== undefined && shape.assetId === undefined
              ? ['asset_minted_to_mint_seq_index']
              : [],
          );
        }
      }
    },
  );

  it.runIf(kind === 'sqlite').each(SHAPES)(
    'reads %s on SQLite from an index ending with seq, sorting nothing but the merge',
    async (_name, shape) => {
      const read = transferHistoryQuery({ ...shape, limit: 21, before: TRANSFERS / 2 });
      const plan = await em().execute<{ id: number; parent: number; detail: string }[]>(
        `explain query plan ${read.sql}`,
        read.params,
      );
      const details = plan.map((step) => step.detail);
      const scans = details.filter((detail) => /\b(SCAN|SEARCH) transfer\b/.test(detail));
      expect(scans.length, details.join('\n')).toBeGreaterThan(0);
      for (const scan of scans)
        expect(scan, details.join('\n')).toMatch(
          /USING (COVERING )?INDEX (transfer_\w+_seq_index|sqlite_autoindex_transfer_\d+|transfer_seq_unique)/,
        );
      // Issue 37: a wallet's history (no asset) reads the NFTs minted to it from their index.
      const mintScans = details.filter((detail) => /\b(SCAN|SEARCH) asset\b/.test(detail));
      expect(mintScans, details.join('\n')).toHaveLength(
        shape.wallet !== undefined && shape.assetId === undefined ? 1 : 0,
      );
      for (const scan of mintScans)
        expect(scan, details.join('\n')).toMatch(
          /^SEARCH asset USING (COVERING )?INDEX asset_minted_to_mint_seq_index\b/,
        );
      // A branch's own ORDER BY is its index order: nothing is sorted inside a branch (a co-routine);
      // the merge of two branches sorts what each returned (at most its LIMIT).
      const parentOf = new Map(plan.map((step) => [step.id, step.parent]));
      const detailOf = new Map(plan.map((step) => [step.id, step.detail]));
      const inBranch = (id: number): boolean => {
        for (let at = parentOf.get(id); at !== undefined && at !== 0; at = parentOf.get(at))
          if (/^CO-ROUTINE/.test(detailOf.get(at) ?? '')) return true;
        return false;
      };
      const sorts = plan.filter((step) => /TEMP B-TREE/.test(step.detail));
      expect(
        sorts.filter((step) => inBranch(step.id)),
        details.join('\n'),
      ).toEqual([]);
      if (shape.wallet === undefined) expect(sorts, details.join('\n')).toEqual([]);
    },
  );
});

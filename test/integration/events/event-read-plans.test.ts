// The outbox's filtered reads (REST catch-up, WebSocket replay, webhook catch-up: src/events/reads.ts)
// are index-driven on PostgreSQL whatever its statistics (issue 34): 100,000 events written in bulk
// after the table was analyzed (empty, or at 2,000 events), autovacuum off for it (so the planner
// knows nothing of them, as after a large airdrop), in partitions of 10,000 ids created ahead by the
// keeper as the events arrive (src/db/outbox-partitions.ts; never analyzed, as in service), and every
// read shape the service issues EXPLAINed
// as the service sends it (`readEvents`: the EXECUTE of `eventReadQuery`'s prepared statement with its
// planner settings and a generic plan, on the ORM's pool: `readPinned`). Every scan of the outbox must be an index scan right
// under its branch's LIMIT (or in the Append of the partitions right under it), no sequential scan, no
// bitmap scan, no sort of the rows of a scan, and only the partitions past the resume point read
// (pruned by `id > ?` as the plan starts). A control shows the same statistics mislead the planner left to its defaults.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { readPinned } from '../../../src/db/dialect.ts';
import { EVENT_TYPES, type EventType } from '../../../src/db/entities/OutboxEvent.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { outboxPartitions, PARTITION_IDS_ROW } from '../../../src/db/outbox-partitions.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import type { EventFilter } from '../../../src/events/filter.ts';
import { type EventReadQuery, eventReadQuery } from '../../../src/events/reads.ts';
import { pgRelayConnection } from '../../../src/events/relay-connection.ts';
import { EventStore, RELAY_READ_PG } from '../../../src/events/store.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';
import { nodesOf, type PlanNode, pagePlanProblems, partitionsRead } from '../../helpers/pg-plans.ts';

const EVENTS = 100_000;
/** Ids per partition (the service's default is 1,000,000). */
const PARTITION_IDS = 10_000;
const WALLETS = 10_000;
/** Lowercase address of wallet number n, as the outbox stores it. */
const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

/**
 * The bulk rows in the service's own format (src/domain/ledger/outbox.ts): 1% price updates (no
 * wallet), 10% new NFTs (`to` their first owner), the rest currency transfers between wallets.
 */
const bulkInsert = (first: number, last: number) => `
  insert into outbox_event (type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet, operation_id)
  select e.type, now() - make_interval(secs => ${EVENTS} - g), e.data, e.asset, e.collection,
         case when e.type = 'priceUpdate' then '[]'::jsonb
              when e.type = 'newNFT' then jsonb_build_array(e.to_w)
              else jsonb_build_array(e.from_w, e.to_w) end,
         case when e.type = 'newTransfer' then e.from_w end,
         case when e.type <> 'priceUpdate' then e.to_w end,
         null
  from generate_series(${first}, ${last}) g,
  lateral (select
      case when g % 100 = 0 then 'priceUpdate' when g % 10 = 1 then 'newNFT' else 'newTransfer' end as type,
      case when g % 10 = 1 and g % 100 <> 0 then 'nft' || g when g % 2 = 0 then 'gold' else 'gems' end as asset,
      case when g % 2 = 0 then 'dawn-quest' else 'night-raid' end as collection,
      '0x' || lpad(to_hex(g % ${WALLETS}), 40, '0') as from_w,
      '0x' || lpad(to_hex((g * 7 + 1) % ${WALLETS}), 40, '0') as to_w,
      jsonb_build_object('id', 'tr_' || g, 'status', 'completed', 'amount', '1') as data) e`;

const types = (...list: EventType[]) => new Set(list);
const ALL = new Set(EVENT_TYPES);

/** Every filter shape the service reads with (REST `listEvents`, `/ws` and `/assets/subscribe`, webhooks). */
const SHAPES: [name: string, filter: EventFilter | undefined][] = [
  ['no filter (the relay-free REST default)', undefined],
  ['every type', { types: ALL }],
  ['one type', { types: types('priceUpdate') }],
  ['some types', { types: types('newNFT', 'assetUpdated') }],
  ['a wallet', { types: ALL, wallet: wallet(1_234) }],
  ['a wallet without events', { types: ALL, wallet: wallet(WALLETS + 5) }],
  ['a wallet, transfers only', { types: types('newTransfer'), wallet: wallet(1_234) }],
  ['a wallet, transfers and prices', { types: types('newTransfer', 'priceUpdate'), wallet: wallet(1_234) }],
  ['an NFT', { types: ALL, assetId: 'nft101' }],
  ['a currency', { types: ALL, assetId: 'gold' }],
  ['an NFT, some types', { types: types('newNFT', 'newTransfer'), assetId: 'nft101' }],
  ['a collection', { types: ALL, collection: 'night-raid' }],
  ['a wallet and an asset (/assets/subscribe)', { types: ALL, wallet: wallet(1_234), assetId: 'gold' }],
  ['a wallet and a collection', { types: ALL, wallet: wallet(1_234), collection: 'dawn-quest' }],
];

/** Resume points: the start, a point in the middle, near the end. */
const AFTER = [0, EVENTS / 2, EVENTS - 500];

interface ExplainRow {
  Plan: PlanNode;
  'Execution Time'?: number;
}

const planProblems = (plan: PlanNode) => pagePlanProblems(plan, 'outbox_event');
/** The log's partitions an analyzed plan ran (initialized and never run ones left out), sorted. */
const executed = (plan: PlanNode) =>
  nodesOf(plan)
    .filter(({ node }) => node['Relation Name']?.startsWith('outbox_event_') && node['Actual Loops'])
    .map(({ node }) => node['Relation Name'])
    .sort();

/** How stale the statistics are when the 100,000 events arrive. */
const STATES: [name: string, analyzedAt: number][] = [
  ['analyzed while empty', 0],
  ['analyzed at 2,000 events', 2_000],
];

describe.runIf(DB_KINDS.includes('postgres')).each(STATES)(
  'outbox read plans on PostgreSQL, %s',
  (_state, analyzedAt) => {
    let db: ScratchDatabase;
    let opened: Database;
    let orm: Orm;

    /** The plan of a read as the service sends it (`readEvents`: `readPinned`). */
    const explain = async (query: EventReadQuery, options = 'format json'): Promise<ExplainRow> => {
      const em = orm.em.fork() as unknown as EntityManager;
      const rows = await readPinned<{ 'QUERY PLAN': [ExplainRow] }>(em, query, `explain (${options}) `);
      return rows[0]['QUERY PLAN'][0];
    };
    /** The plan of a statement with the planner's defaults. */
    const explainPlain = async (sql: string, params: unknown[]): Promise<PlanNode> => {
      const rows = await orm.em
        .fork()
        .execute<{ 'QUERY PLAN': [ExplainRow] }[]>(`explain (format json) ${sql}`, params);
      return rows[0]['QUERY PLAN'][0].Plan;
    };
    const query = (
      after: number,
      limit: number,
      filter: EventFilter | undefined,
      upTo?: number,
    ): EventReadQuery => {
      const read = eventReadQuery(after, limit, filter, upTo);
      if (!read) throw new Error('the shape reads nothing');
      return read;
    };

    /** The partitions holding ids above `after` (and none above `upTo`), as the reads should prune them. */
    let partitionsAbove: (after: number, upTo?: number) => string[];

    beforeAll(async () => {
      db = await migratedDatabase('postgres');
      opened = await openDatabase(db);
      orm = opened.orm;
      const connection = orm.em.getConnection();
      const store = new EventStore(opened);
      await connection.execute('insert into sequence_counter (name, value) values (?, ?)', [
        PARTITION_IDS_ROW,
        PARTITION_IDS,
      ]);
      // The partitions the migration made ahead (1,000,000 ids each) are empty: replaced by the
      // keeper's, of PARTITION_IDS, as the events arrive. Autovacuum off for every partition (the
      // partitioned table has no storage of its own), so nothing analyzes them behind the test's
      // back: the planner's statistics describe the table as it was at `analyzedAt` events, and the
      // partitions created later were never analyzed.
      const partitions = () => outboxPartitions((sql) => connection.execute(sql));
      for (const range of await partitions())
        if (range.from !== null) await connection.execute(`drop table "${range.name}"`);
      const insert = async (first: number, last: number) => {
        for (let from = first; from <= last; from += PARTITION_IDS) {
          await store.keepPartitionsAhead();
          for (const range of await partitions())
            await connection.execute(`alter table "${range.name}" set (autovacuum_enabled = false)`);
          await connection.execute(bulkInsert(from, Math.min(last, from + PARTITION_IDS - 1)));
        }
      };
      await insert(1, analyzedAt);
      await connection.execute('analyze outbox_event');
      await insert(analyzedAt + 1, EVENTS);
      const ranges = await partitions();
      // The keeper made partitions ahead of the ids: the bounded reads below must leave them out.
      expect(ranges.some((range) => (range.from ?? 0) > EVENTS)).toBe(true);
      // PostgreSQL keeps a partition whose range reaches past `after` (it does not count on ids being
      // integers: `id > 0` keeps `[MINVALUE, 1)`).
      partitionsAbove = (after, upTo) =>
        ranges
          .filter((range) => range.to > after && (upTo === undefined || (range.from ?? 0) <= upTo))
          .map((range) => range.name)
          .sort();
      // The events in ten partitions.
      const [{ used }] = await connection.execute<{ used: string }[]>(
        'select count(distinct tableoid) as used from outbox_event',
      );
      expect(Number(used)).toBe(EVENTS / PARTITION_IDS);
      const [{ count }] = await connection.execute<{ count: string }[]>(
        'select count(*) as count from outbox_event',
      );
      expect(Number(count)).toBe(EVENTS);
    });

    afterAll(async () => {
      await opened.close();
      await db.drop();
    });

    it('misleads the planner left to its defaults (so the checks below are worth something)', async () => {
      // The wallet filter before issue 34, and the reads of today without their planner settings.
      const before = await explainPlain(
        "select * from outbox_event where (type = 'priceUpdate' or from_wallet = ? or to_wallet = ?) and id > ? order by id limit ?",
        [wallet(1_234), wallet(1_234), 0, 20],
      );
      const withoutSettings = await Promise.all(
        SHAPES.flatMap(([, filter]) =>
          AFTER.map((after) => {
            const read = query(after, 200, filter);
            return explainPlain(read.sql, read.params);
          }),
        ),
      );
      const problems = [
        ...(usesIndex(before) ? [] : ['the former wallet filter reads no index of its own']),
        ...withoutSettings.flatMap(planProblems),
      ];
      expect(problems).not.toEqual([]);
    });

    it.each(SHAPES)(
      'reads %s from an index, under a LIMIT, with no sort of a scan',
      async (_name, filter) => {
        for (const after of AFTER) {
          for (const limit of [20, 100, 200]) {
            const { Plan: plan } = await explain(query(after, limit, filter));
            expect(planProblems(plan), `after ${after}, limit ${limit}: ${JSON.stringify(plan)}`).toEqual([]);
            // Partition pruning: the partitions wholly at or before the resume point are not in the plan.
            expect(partitionsRead(plan, 'outbox_event')).toEqual(partitionsAbove(after));
            // As the service reads up to the relay's position: nor the partitions made ahead of it.
            const bounded = (await explain(query(after, limit, filter, EVENTS))).Plan;
            expect(planProblems(bounded), `bounded: ${JSON.stringify(bounded)}`).toEqual([]);
            expect(partitionsRead(bounded, 'outbox_event')).toEqual(partitionsAbove(after, EVENTS));
            // A generic plan (the values are parameters in its conditions): planned once per
            // connection, its partitions pruned from the values when it starts, not when planned.
            expect(JSON.stringify(bounded)).toMatch(/"Index Cond":"[^"]*\$\d/);
            expect(JSON.stringify(bounded)).toMatch(/"Subplans Removed":[1-9]/);
          }
        }
      },
    );

    it("reads the relay's page from the primary key, also with a generic plan of its prepared statement", async () => {
      // The relay prepares its read once (a named statement): after a few runs PostgreSQL may keep a
      // generic plan, made without the values.
      const connection = orm.em.getConnection();
      const plans: PlanNode[] = [];
      await connection.transactional(async (tx) => {
        await connection.execute(`prepare relay_next (bigint, bigint) as ${RELAY_READ_PG}`, [], 'run', tx);
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await connection.execute(`set local plan_cache_mode = ${mode}`, [], 'run', tx);
          const rows = await connection.execute<{ 'QUERY PLAN': [ExplainRow] }[]>(
            `explain (format json) execute relay_next(${EVENTS / 2}, 100)`,
            [],
            'all',
            tx,
          );
          plans.push(rows[0]['QUERY PLAN'][0].Plan);
        }
        await connection.execute('deallocate relay_next', [], 'run', tx);
      });
      for (const plan of plans) {
        expect(planProblems(plan), JSON.stringify(plan)).toEqual([]);
        expect(JSON.stringify(plan)).toMatch(/outbox_event_p\d+_pkey/);
      }
    });

    it('runs the pinned reads without JIT, however costly their generic plans are estimated', async () => {
      const em = orm.em.fork() as unknown as EntityManager;
      for (const filter of [undefined, { types: ALL, wallet: wallet(7) }]) {
        const rows = await readPinned<{ 'QUERY PLAN': unknown }>(
          em,
          query(0, 100, filter, EVENTS),
          'set local jit_above_cost = 0; explain (analyze, format json) ',
        );
        expect(JSON.stringify(rows[0]['QUERY PLAN'])).not.toContain('JIT');
      }
    });

    it("runs the relay's reads on its connection with generic plans only, never planned again", async () => {
      // Left to choose (plan_cache_mode auto), PostgreSQL planned the relay's read at each run, its
      // custom plan estimated cheaper: on a grown log each planning probed every partition's key ends,
      // and a REST page's flush runs that read (issue 34).
      const relay = await pgRelayConnection(orm, createLogger('silent'));
      try {
        const store = new EventStore(opened, relay);
        for (let run = 0; run < 8; run++) {
          expect(await store.next(EVENTS - 5 + run, 100)).toHaveLength(Math.max(0, 5 - run));
          await store.changesAfter(0, 100);
        }
        const statements = await relay.query<{ name: string; generic_plans: string; custom_plans: string }>(
          "select name, generic_plans, custom_plans from pg_prepared_statements where name like 'gats_relay_%' order by name",
          [],
        );
        expect(
          statements.map((row) => [row.name, Number(row.generic_plans), Number(row.custom_plans)]),
        ).toEqual([
          ['gats_relay_changes', 8, 0],
          ['gats_relay_next', 8, 0],
        ]);
        // Never compiled (JIT), however costly its generic plan is estimated: on a log of 10,000,000
        // events the compilation took 108-182 ms of each run of a 0.06 ms read.
        await relay.query('set jit_above_cost = 0', []);
        const [explained] = await relay.query<{ 'QUERY PLAN': unknown }>(
          'explain (analyze, format json) execute gats_relay_next(0, 100)',
          [],
        );
        expect(JSON.stringify(explained['QUERY PLAN'])).not.toContain('JIT');
      } finally {
        await relay.close();
      }
    });

    it("reads an NFT's events up to its newest event only, not the partitions after it", async () => {
      // Issue 34: an NFT has a few events, so its page never fills and the read went on descending into
      // every partition up to the relay's position. Its newest event is in asset_last_event (written
      // by the ledger function with the events: nft-last-event.test.ts), and the read stops there. nft101's events: its mint (101) and, for this test, 50,001.
      const connection = orm.em.getConnection();
      const read = async () => {
        const { Plan: plan } = await explain(
          query(0, 20, { types: ALL, assetId: 'nft101' }, EVENTS),
          'analyze, format json',
        );
        expect(planProblems(plan)).toEqual([]);
        expect(plan['Actual Rows']).toBe(2);
        return executed(plan);
      };
      await connection.execute(`update outbox_event set asset_id = 'nft101' where id = 50001`);
      try {
        // Without a bound (an NFT of a release before the table): every partition up to the relay's.
        expect(await read()).toEqual(partitionsAbove(0, EVENTS));
        await connection.execute(
          `insert into asset_last_event (asset_id, event_id) values ('nft101', 50001)`,
        );
        expect(await read()).toEqual(partitionsAbove(0, 50_001));
        expect(partitionsAbove(0, 50_001).length).toBeLessThan(partitionsAbove(0, EVENTS).length);
      } finally {
        await connection.execute(`update outbox_event set asset_id = 'gems' where id = 50001`);
        await connection.execute(`delete from asset_last_event where asset_id = 'nft101'`);
      }
    });

    it("reads a wallet's events up to its newest event as `from` or `to` only, not the partitions after it", async () => {
      // Issue 34: a wallet has a few events, so its `from` and `to` branches never fill the page and
      // went on descending into every partition up to the relay's position. Its newest event is in
      // wallet_last_event (written by the ledger function with the events: wallet-last-event.test.ts),
      // and those branches stop there. A wallet of its own: sent the event 101, received 50,001 (the
      // price updates' branch, which has no bound, is left out by the types).
      const connection = orm.em.getConnection();
      const own = wallet(WALLETS + 7);
      const read = async () => {
        const { Plan: plan } = await explain(
          query(0, 20, { types: types('newTransfer', 'newNFT'), wallet: own }, EVENTS),
          'analyze, format json',
        );
        expect(planProblems(plan)).toEqual([]);
        expect(plan['Actual Rows']).toBe(2);
        return executed(plan);
      };
      const [{ from: sender, to: receiver }] = await connection.execute<{ from: string; to: string }[]>(
        'select (select from_wallet from outbox_event where id = 101) as from, (select to_wallet from outbox_event where id = 50001) as to',
      );
      await connection.execute('update outbox_event set from_wallet = ? where id = 101', [own]);
      await connection.execute('update outbox_event set to_wallet = ? where id = 50001', [own]);
      const both = (partitions: string[]) => [...partitions, ...partitions].sort();
      try {
        // Without a bound (an address of a release before the table, or the zero address): each
        // branch reads every partition up to the relay's.
        expect(await read()).toEqual(both(partitionsAbove(0, EVENTS)));
        await connection.execute('insert into wallet_last_event (wallet, event_id) values (?, 50001)', [own]);
        expect(await read()).toEqual(both(partitionsAbove(0, 50_001)));
        expect(partitionsAbove(0, 50_001).length).toBeLessThan(partitionsAbove(0, EVENTS).length);
      } finally {
        await connection.execute('update outbox_event set from_wallet = ? where id = 101', [sender]);
        await connection.execute('update outbox_event set to_wallet = ? where id = 50001', [receiver]);
        await connection.execute('delete from wallet_last_event where wallet = ?', [own]);
      }
    });

    it("stops a wallet's price updates at the relay's newest one, dropping the partitions after it as the plan starts", async () => {
      // Issue 34: where prices are rare, a wallet read's branch of price updates never fills its page
      // and went on through every partition up to the relay's position. The relay knows the newest
      // price update it has handed over (OutboxTail `newestPriceUpdate`), and the read passes it: a
      // value, so the partitions after it are pruned as the plan starts. Price updates are every 100th
      // id here: 50 of them between 45,000 and 50,000, fewer than the page.
      const filter = { types: types('priceUpdate'), wallet: wallet(1_234) };
      const read = async (priceUpdatesUpTo?: number) => {
        const read = eventReadQuery(45_000, 200, filter, EVENTS, priceUpdatesUpTo);
        if (!read) throw new Error('the shape reads nothing');
        const { Plan: plan } = await explain(read, 'analyze, format json');
        expect(planProblems(plan)).toEqual([]);
        return { rows: plan['Actual Rows'], partitions: partitionsRead(plan, 'outbox_event') };
      };
      expect(await read()).toEqual({ rows: 200, partitions: partitionsAbove(45_000, EVENTS) });
      expect(await read(50_000)).toEqual({ rows: 50, partitions: partitionsAbove(45_000, 50_000) });
      expect(partitionsAbove(45_000, 50_000).length).toBeLessThan(partitionsAbove(45_000, EVENTS).length);
    });

    it('reads a wallet page from the middle of the log in a few milliseconds', async () => {
      const analyzed = await explain(
        query(EVENTS / 2, 20, { types: ALL, wallet: wallet(1_234) }),
        'analyze, format json',
      );
      expect(planProblems(analyzed.Plan)).toEqual([]);
      // The branches read a few dozen index entries; a walk of the primary key from the middle, tens of ms.
      expect(analyzed['Execution Time']).toBeLessThan(20);
    });
  },
);

/** Whether the wallet filter of the old shape used a wallet or type index at all. */
function usesIndex(plan: PlanNode): boolean {
  return /from_wallet_id_index|to_wallet_id_index|type_id_index|asset_id_id_index|collection_id_id_index/.test(
    JSON.stringify(plan),
  );
}

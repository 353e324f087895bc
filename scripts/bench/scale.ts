// Scale (issue 34): the same loads on a ledger grown in stages through the service's own write paths,
// measured at each stage beside Koa hello, each as a share of its figure on a small ledger measured
// just before it: a reference service on a database of its own, grown to the first stage, on which
// every load runs right before it runs on the grown service. This machine's speed drifts by a third
// within minutes (Koa hello, a process that touches no file, served 30,000 to 47,000 answers a
// second in consecutive runs), so a figure taken 20 minutes earlier, at the first stage, measured
// the machine as much as the ledger; side by side, both share the machine of that minute. Each pair
// (reference, then grown) runs `--rounds` times (3 by default); the figures are the medians.
//
// Growth, per 20 new wallets (one airdrop batch): a batch mint of 100 items (each wallet gets 2
// currencies and 3 NFTs), a 10-leg batch transfer of a currency from the studio to 10 of them, 2
// metadata updates of the NFTs just minted, and a craft by the studio (burns currency, mints an NFT):
// about 5 holdings and 5.7 events per wallet. 4 such units in flight.
// With `--bulk-events N`, a last stage grows the event log alone to N events: the service is
// stopped, copies of the log's own rows (the service's format, new ids from the table's own
// sequence; each copy's NFT and wallets other than its row's: `growLog`) are inserted in bulk, with
// the rows the ledger function keeps beside its events (on PostgreSQL each address's newest event),
// and the service starts again on it (the issue's long-lived log).
//
// Measured at each stage, each load on a settled service after a 1 s warm-up:
// - wallet reads, cached (a hot set of 100 wallets) and `Cache-Control: no-cache` (a random wallet);
// - `GET /assets/{id}` of a random NFT, no-cache;
// - event pages from a random point (`/api/v1/events?after=<random>&limit=100`);
// - wallet-filtered events (`?walletId=<random>&limit=20`), asset-filtered events of a random NFT
//   (`?assetId=`) and of a currency from a random point (`?assetId=&after=<random>`);
// - WebSocket subscribes replaying a random wallet's events from a random point in the replay window
//   (lib/ws-replays.ts);
// - transfers of a currency from the studio to random wallets; batch mints of 20 items to 4 new wallets;
// - start-up time (the service restarted on the database: spawn to the first 200 on /healthz),
//   `npm run db:check` and the backup (SQLite: `npm run db:backup`; PostgreSQL: `pg_dump -Fc`);
// - bytes per holding (every table and index) and per event (outbox_event and its indexes), and the
//   largest tables and indexes. Statistics as the service leaves them: no ANALYZE (this machine's
//   PostgreSQL runs without autovacuum).
// Beside each load's first round on each ledger: the service's CPU by thread an answer, and its
// garbage collection (pauses by kind a 1,000 answers, heap in use after; lib/gc-counters.ts, read
// from its /metrics).
//
//   npm run bench -- scale --db both --stages 1000,20000,200000 [--bulk-events 10000000] [--vacuum] --duration 5 --connections 20
//
// With `--vacuum` (PostgreSQL), the last stage is measured once more after `VACUUM (ANALYZE)`: what a
// server with autovacuum keeps (dead rows gone, hint bits and visibility map set, fresh statistics).
// Recorded beside the last stage; the targets are judged on the stage as the service left it.
//
// With `--pg-shared-buffers 2GB` (PostgreSQL), the run has a server of its own with that
// `shared_buffers` (the machine's has 128 MB); its records name the size. With
// `--outbox-partition-ids N` (PostgreSQL) the event log's partitions after the migration's first two
// hold N ids each (the records name it): reads that pass through partitions without filling their
// page pay for each partition.
//
// With `--pg-statements` (PostgreSQL), the run has a server of its own with pg_stat_statements loaded
// (nested statements and planning tracked), and the first round of each load prints, for each ledger,
// the statements that read the most blocks an answer: blocks, calls and plans an answer, time a call
// (planning, JIT) and the statement's text (lib/pg-statements.ts). Tracking slows every statement:
// such a run is not recorded.
//
// With `--asset-views N` both services keep N assets' fixed views and N addresses' checksum forms
// (ASSET_VIEW_CACHE_ENTRIES, ADDRESS_CACHE_ENTRIES; 10,000 each by default) and every wallet is
// listed twice before each stage's loads, so that the listing caches hold what fits (a view is kept
// at its second sighting); the records name it.
//
// `--loads TEXT` measures only the loads whose label holds TEXT (`--loads no-cache`: the two
// `no-cache` reads; `--loads "no-cache|events (an NFT)"`: those, then an NFT's events), to look at
// one load, or one after another, in minutes; such a run is not recorded.
// `--stages` are wallet totals, smallest first (5 holdings each: 200,000 wallets is 1,000,000 holdings).
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { openDatabase } from '../../src/db/database.ts';
import { PARTITION_IDS_ROW } from '../../src/db/outbox-partitions.ts';
import { keepWalletBoundsSql } from '../../src/events/reads.ts';
import { EventStore } from '../../src/events/store.ts';
import { call, createCurrency, createUser, mint, NFT_METADATA, type Session } from '../lib/api.ts';
import { deferCleanup } from '../lib/cleanup.ts';
import { forEachLimit } from '../lib/concurrency.ts';
import { type DbKind, usePostgresServer } from '../lib/database.ts';
import { startScratchServer } from '../lib/pg-cluster.ts';
import { cpuSeconds, machineCpu, rssBytes, unwrittenBytes } from '../lib/proc.ts';
import { type Service, startService } from '../lib/service.ts';
import { NODE, ROOT } from '../lib/service-process.ts';
import { gcCounters, gcPerAnswer } from './lib/gc-counters.ts';
import { startHello } from './lib/hello.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import {
  enableStatements,
  STATEMENT_SETTINGS,
  statementCounters,
  statementsPerAnswer,
} from './lib/pg-statements.ts';
import { record, round1, round4 } from './lib/record.ts';
import { fixed, heading, loadTable, table, threadTable } from './lib/report.ts';
import { byTable, ioCounters, ioPerAnswer, type Sizes, sizes } from './lib/scale-storage.ts';
import { runReplays } from './lib/ws-replays.ts';

const run = promisify(execFile);

const COLLECTION = 'bench-scale';
const CURRENCIES = ['scale-gold', 'scale-gems'];
const NFTS_PER_WALLET = 3;
/** Wallets per airdrop batch: 20 wallets of 5 items, the batch mint's maximum of 100 items. */
const WALLETS_PER_UNIT = 20;
/** Legs of the batch transfer of each unit, and metadata updates per unit. */
const TRANSFER_LEGS = 10;
const METADATA_UPDATES = 2;
/** Growth units in flight. */
const GROWTH_CONCURRENCY = 4;
/** NFT ids kept for the asset reads (a uniform sample of every NFT minted). */
const NFT_SAMPLE = 20_000;
/** Wallets of the cached reads. */
const HOT_WALLETS = 100;
/** Wallets per batch mint of the measured load (5 items each). */
const LOAD_MINT_WALLETS = 4;
/** Replays start at most this many events back (inside WS_MAX_REPLAY_EVENTS, 10,000 by default). */
const REPLAY_WINDOW = 5_000;
/** Rows copied per statement when the log grows in bulk. */
const BULK_CHUNK = 500_000;

interface OpTimes {
  startupMs: number;
  /** CPU the new process used until its first 200 (moves much less with the machine's load). */
  startupCpuMs: number;
  checkMs: number;
  checkOk: boolean;
  backupMs: number;
  backupBytes: number;
}

interface StageFigures {
  label: string;
  wallets: number;
  size: Sizes;
  growSeconds: number;
  hello: LoadResult;
  loads: LoadResult[];
  /** Each load (as `loads`) on the reference service, run just before it ran on the grown one. */
  reference: LoadResult[];
  /**
   * Each load's median over the rounds of req/s on the grown ledger / req/s on the reference just
   * before, and of p99 on the grown ledger / the reference's; `loads` and `reference` hold the round
   * whose rate ratio is the median (the lower middle one of an even number).
   */
  kept: number[];
  p99Growth: number[];
  /** Start-up, db:check and backup; none for the stage measured again after VACUUM. */
  ops?: OpTimes;
  /** The last stage measured again after `VACUUM (ANALYZE)` (`--vacuum`). */
  afterVacuum?: boolean;
  /** The stage whose log was grown in bulk (`--bulk-events`): its ledger is the stage's before. */
  bulkLog?: boolean;
}

/** A service and what the benchmark knows of its ledger. */
interface Ledger {
  service: Service;
  world: World;
}

/** What the benchmark knows of the ledger it grew. */
interface World {
  studio: Session;
  recipe: string;
  wallets: string[];
  nfts: string[];
  nftsSeen: number;
}

/**
 * The database as the records name it: its kind; on PostgreSQL also a `shared_buffers` other than the
 * default 128 MB (the run's own server, `--pg-shared-buffers`, or one given by BENCH_POSTGRES_URL) and
 * a partition width set by `--outbox-partition-ids`: the event reads of a large log depend on both.
 */
async function serverName(
  kind: DbKind,
  service: Service,
  partitionIds?: number,
  assetViews?: number,
): Promise<string> {
  const views =
    assetViews === undefined ? [] : [`${assetViews.toLocaleString('en-US')} asset views and addresses kept`];
  if (kind !== 'postgres') return [kind, ...views].join(', ');
  const megabytes = await service.count(
    "select setting::bigint * 8192 / 1048576 as n from pg_settings where name = 'shared_buffers'",
  );
  return [
    kind,
    ...(megabytes === 128 ? [] : [`shared_buffers ${megabytes} MB`]),
    ...(partitionIds === undefined ? [] : [`log partitions of ${partitionIds.toLocaleString('en-US')} ids`]),
    ...views,
  ].join(', ');
}

export async function scale(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) await scaleOn(kind, options);
}

/**
 * `--pg-shared-buffers`, `--pg-statements`: a PostgreSQL server of the benchmark's own for the run, as
 * the machine's (initdb's defaults, autovacuum off) but for that `shared_buffers` and with
 * pg_stat_statements loaded; stopped and removed at the end.
 */
async function ownServer(options: BenchOptions): Promise<() => Promise<void>> {
  const server = await startScratchServer({
    ...(options.pgSharedBuffers && { shared_buffers: options.pgSharedBuffers }),
    ...(options.pgStatements && STATEMENT_SETTINGS),
    autovacuum: 'off',
  });
  usePostgresServer(server.url());
  return deferCleanup(() => server.close());
}

async function scaleOn(kind: DbKind, options: BenchOptions): Promise<void> {
  const closeServer =
    kind === 'postgres' && (options.pgSharedBuffers || options.pgStatements)
      ? await ownServer(options)
      : undefined;
  try {
    await scaleOnServer(kind, options);
  } finally {
    await closeServer?.();
  }
}

async function scaleOnServer(kind: DbKind, options: BenchOptions): Promise<void> {
  const hello = await startHello();
  const serviceEnv: Record<string, string> =
    options.assetViews === undefined
      ? {}
      : {
          ASSET_VIEW_CACHE_ENTRIES: String(options.assetViews),
          ADDRESS_CACHE_ENTRIES: String(options.assetViews),
        };
  const service = await startService(kind, serviceEnv);
  const referenceService = await startService(kind, serviceEnv);
  if (kind === 'postgres' && options.pgStatements) await enableStatements(service.env.DATABASE_URL);
  const stages: StageFigures[] = [];
  try {
    const partitionIds = kind === 'postgres' ? options.outboxPartitionIds : undefined;
    // Before any write: the partitions the keeper attaches from now on have this many ids.
    if (partitionIds !== undefined)
      await service.execute(
        `insert into sequence_counter (name, value) values ('${PARTITION_IDS_ROW}', ${partitionIds}) ` +
          'on conflict (name) do update set value = excluded.value',
      );
    const server = await serverName(kind, service, partitionIds, options.assetViews);
    heading(`scale on ${server}`, {
      stages: options.stages.join(', '),
      ...(options.bulkEvents > 0 && { 'bulk events': options.bulkEvents }),
      'holdings per wallet': CURRENCIES.length + NFTS_PER_WALLET,
      connections: options.connections,
      'seconds per run': options.durationSeconds,
    });
    const world = await setUp(service);
    // The reference: the first stage's ledger, grown the same way, measured beside every stage.
    const reference: Ledger = { service: referenceService, world: await setUp(referenceService) };
    await grow(
      referenceService,
      reference.world,
      Array.from({ length: options.stages[0] }, () => randomAddress()),
    );
    for (const total of options.stages) {
      const started = performance.now();
      const added = Array.from({ length: Math.max(0, total - world.wallets.length) }, () => randomAddress());
      await grow(service, world, added);
      const growSeconds = (performance.now() - started) / 1000;
      const label = `${world.wallets.length.toLocaleString('en-US')} wallets`;
      stages.push(await measureStage({ service, world }, reference, hello, options, label, growSeconds));
    }
    if (options.bulkEvents > 0) {
      const started = performance.now();
      await service.stopProcess();
      const inserted = await growLog(service, options.bulkEvents);
      const growSeconds = (performance.now() - started) / 1000;
      console.log(`bulk: ${inserted} events copied in ${fixed(growSeconds)} s`);
      const bulk = await measureStage(
        { service, world },
        reference,
        hello,
        options,
        `${world.wallets.length.toLocaleString('en-US')} wallets + bulk log`,
        growSeconds,
        true,
      );
      stages.push({ ...bulk, bulkLog: true });
    }
    if (options.vacuum && kind === 'postgres') {
      // What a server with autovacuum would have done by now: dead rows removed, hint bits and the
      // visibility map set, statistics fresh. Informative only: the targets are judged before it.
      const started = performance.now();
      await service.execute('vacuum (analyze)');
      const vacuumSeconds = (performance.now() - started) / 1000;
      console.log(`VACUUM (ANALYZE) in ${fixed(vacuumSeconds)} s`);
      const again = await measureStage(
        { service, world },
        reference,
        hello,
        options,
        `${stages[stages.length - 1].label}, after VACUUM`,
        vacuumSeconds,
        false,
        false,
      );
      stages.push({ ...again, afterVacuum: true });
    } else if (options.vacuum)
      console.log("--vacuum: PostgreSQL only (nothing to vacuum for SQLite's reads)");
    summary(server, stages);
  } finally {
    await service.stop();
    await referenceService.stop();
    await hello.stop();
  }
}

async function setUp(service: Service): Promise<World> {
  const studio = await createUser(service, 'studio');
  await call(service.baseUrl, 'POST', '/api/v1/collections', {
    session: studio,
    body: { id: COLLECTION, name: `Collection ${COLLECTION}`, mutableAttributes: ['level'] },
  });
  for (const currency of CURRENCIES) await createCurrency(service, studio, currency, COLLECTION);
  // The transfers' and crafts' source: plenty of the first currency in the studio's own wallet.
  await mint(service, studio, CURRENCIES[0], studio.wallet, '1000000000');
  const recipe = await call<{ id: string }>(
    service.baseUrl,
    'POST',
    `/api/v1/collections/${COLLECTION}/recipes`,
    {
      session: studio,
      body: {
        name: 'Forge',
        inputs: [{ assetId: CURRENCIES[0], amount: '1' }],
        outputs: [{ nft: { name: 'Forged blade', metadata: NFT_METADATA } }],
      },
    },
  );
  return { studio, recipe: recipe.id, wallets: [], nfts: [], nftsSeen: 0 };
}

/** Keeps a uniform sample of every NFT id seen (reservoir sampling). */
function sampleNft(world: World, id: string): void {
  world.nftsSeen++;
  if (world.nfts.length < NFT_SAMPLE) world.nfts.push(id);
  else {
    const slot = Math.floor(Math.random() * world.nftsSeen);
    if (slot < NFT_SAMPLE) world.nfts[slot] = id;
  }
}

function randomAddress(): string {
  return `0x${randomBytes(20).toString('hex')}`;
}

function airdropItems(wallets: string[]) {
  return wallets.flatMap((to) => [
    ...CURRENCIES.map((currency) => ({ to, currency, amount: '100' })),
    ...Array.from({ length: NFTS_PER_WALLET }, (_, index) => ({
      to,
      nft: { name: `Starter item ${index + 1}`, metadata: NFT_METADATA },
    })),
  ]);
}

/** The growth units for `added` wallets (see the top of the file), GROWTH_CONCURRENCY at a time. */
async function grow(service: Service, world: World, added: string[]): Promise<void> {
  const units: string[][] = [];
  for (let start = 0; start < added.length; start += WALLETS_PER_UNIT)
    units.push(added.slice(start, start + WALLETS_PER_UNIT));
  const { studio } = world;
  let done = 0;
  let reported = performance.now();
  await forEachLimit(units, GROWTH_CONCURRENCY, async (wallets) => {
    const minted = await call<{ nfts: { id: string }[] }>(
      service.baseUrl,
      'POST',
      `/api/v1/collections/${COLLECTION}/mint/batch`,
      { session: studio, body: { items: airdropItems(wallets) } },
    );
    world.wallets.push(...wallets);
    for (const nft of minted.nfts) sampleNft(world, nft.id);
    await call(service.baseUrl, 'POST', '/api/v1/transfer/batch', {
      session: studio,
      body: {
        legs: wallets.slice(0, TRANSFER_LEGS).map((to) => ({
          assetId: CURRENCIES[0],
          from: studio.wallet,
          to,
          amount: '1',
        })),
      },
    });
    for (const nft of minted.nfts.slice(0, METADATA_UPDATES))
      await call(service.baseUrl, 'PATCH', `/api/v1/assets/${nft.id}/metadata`, {
        session: studio,
        body: { attributes: [{ trait_type: 'level', value: 2 }] },
      });
    const crafted = await call<{ nfts: { id: string }[] }>(
      service.baseUrl,
      'POST',
      `/api/v1/recipes/${world.recipe}/craft`,
      { session: studio, body: { wallet: studio.wallet } },
    );
    for (const nft of crafted.nfts) sampleNft(world, nft.id);
    done++;
    if (performance.now() - reported > 30_000) {
      reported = performance.now();
      console.log(`growth: ${done} of ${units.length} units (${WALLETS_PER_UNIT} wallets each)`);
    }
  });
}

/**
 * Grows the stopped service's event log to `target` events with copies of its own rows, oldest
 * first, BULK_CHUNK a statement; returns how many were inserted.
 */
async function growLog(service: Service, target: number): Promise<number> {
  let { events } = await sizes(service);
  const start = events;
  const columns =
    'type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet, operation_id';
  // PostgreSQL: the service (stopped) keeps the log's partitions ahead of its ids; so does this copy,
  // before each statement, with the service's own keeper (a chunk is less than its margin).
  const database =
    service.kind === 'postgres'
      ? await openDatabase({ databaseUrl: service.env.DATABASE_URL, sqlitePath: '' })
      : undefined;
  // A copy names other keys than its row, as a long-lived log's later events do: an NFT of its own
  // (the id's first 24 characters and the copied row's id in hex, within the column's 32; a
  // currency's events stay the currency's) and other wallets (the addresses' first 4 hex digits from
  // the copied row's id). Copying the keys too gave every NFT and early wallet of the grown log about
  // 2,000 events, so its filtered page filled (20 events an answer against 1 on the reference
  // ledger) and those loads compared different answers.
  const hex = (digits: number, value: string) =>
    service.kind === 'postgres'
      ? `lpad(to_hex(${value}), ${digits}, '0')`
      : `printf('%0${digits}x', ${value})`;
  const prefix = (column: string) => `'0x' || ${hex(4, 'id % 65536')} || substr(${column}, 7)`;
  try {
    const store = database ? new EventStore(database) : undefined;
    while (events < target) {
      const count = Math.min(BULK_CHUNK, target - events, events);
      const started = performance.now();
      const copied = columns
        .replace(
          'asset_id',
          `case when asset_id is null or asset_id in (select id from asset where kind = 'fungible') then asset_id else substr(asset_id, 1, 24) || '~' || ${hex(7, 'id')} end`,
        )
        .replace('from_wallet', prefix('from_wallet'))
        .replace('to_wallet', prefix('to_wallet'));
      await store?.keepPartitionsAhead();
      const newest = await service.count('select max(id) as n from outbox_event');
      await service.execute(
        `insert into outbox_event (${columns}) select ${copied} from outbox_event order by id limit ${count}`,
      );
      // PostgreSQL: each address's newest event as `from` or `to`, which the ledger function keeps
      // with every event it writes (wallet_last_event: a wallet's read stops there); the copies name
      // other addresses, and now and then a wallet of the ledger (the same last 36 hex digits).
      if (service.kind === 'postgres') await service.execute(keepWalletBoundsSql(newest));
      events += count;
      console.log(`bulk: ${events} events (${fixed((performance.now() - started) / 1000)} s for ${count})`);
    }
  } finally {
    await database?.close();
  }
  return events - start;
}

async function measureStage(
  grown: Ledger,
  reference: Ledger,
  hello: { baseUrl: string; pid: number },
  options: BenchOptions,
  label: string,
  growSeconds: number,
  restarted = false,
  withOperations = true,
): Promise<StageFigures> {
  const { service, world } = grown;
  // After a bulk insert the service is down: its start is this stage's start-up time.
  const bulkStartupMs = restarted ? await restart(service) : 0;
  const bulkStartupCpuMs = restarted ? cpuSeconds(service.pid) * 1000 : 0;
  const size = await sizes(service);
  console.log(
    `\n--- ${label}: ${size.holdings} holdings, ${size.events} events ` +
      `(grown in ${fixed(growSeconds)} s) ---`,
  );
  const helloLoad: LoadOptions = {
    label: 'Koa hello GET /',
    url: `${hello.baseUrl}/`,
    connections: options.connections,
    durationSeconds: options.durationSeconds,
    serverPid: hello.pid,
  };
  if (options.assetViews !== undefined)
    for (const ledger of [grown, reference]) await listEveryWalletTwice(ledger);
  await flushWrites();
  await settle(service);
  await warmUp(helloLoad, 1);
  const helloResult = await machineWhile(service, hello.pid, () => runLoad(helloLoad));
  // Replays start from the newest event as it is after the loads before them (transfers and mints).
  // On PostgreSQL each service's first round also counts the blocks read and hit per answer, printed
  // under `ledgerName`.
  const ledgerLoads = ({ service, world }: Ledger, newestEvent: number, ledgerName: string) => [
    ...httpLoads(service, world, newestEvent, options)
      .filter((load) => wanted(load.label, options))
      .map(
        (load) => (round: number) =>
          measureLoad(service, load, round === 0 ? ledgerName : undefined, options.pgStatements),
      ),
    ...(wanted(REPLAYS, options)
      ? [async () => replays({ service, world }, options, (await sizes(service)).newestEvent)]
      : []),
  ];
  const referenceLoads = ledgerLoads(reference, (await sizes(reference.service)).newestEvent, 'reference');
  const loads = ledgerLoads(grown, size.newestEvent, 'grown');
  const results: LoadResult[] = [];
  const references: LoadResult[] = [];
  const keptFigures: number[] = [];
  const p99Figures: number[] = [];
  for (const [index, load] of loads.entries()) {
    const pairs: { at: LoadResult; reference: LoadResult }[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const before = await referenceLoads[index](round);
      pairs.push({ reference: before, at: await load(round) });
    }
    const ratios = pairs.map(({ at, reference }) => kept(at, reference));
    // The round whose ratio is the median (the lower middle one of an even number).
    const middle = [...pairs].sort((a, b) => kept(a.at, a.reference) - kept(b.at, b.reference))[
      Math.floor((pairs.length - 1) / 2)
    ];
    results.push(middle.at);
    references.push(middle.reference);
    keptFigures.push(median(ratios));
    p99Figures.push(median(pairs.map(({ at, reference }) => p99Growth(at, reference))));
    console.log(
      `${middle.at.label}: kept ${ratios.map((ratio) => fixed(ratio, 2)).join(', ')} in ${pairs.length} rounds (median ${fixed(median(ratios), 2)})`,
    );
  }
  loadTable([helloResult, ...results]);
  threadTable(results);
  console.log("on the reference ledger, just before each (the median round's):");
  loadTable(references);
  threadTable(references);
  console.log(
    `resident memory after the loads: the grown service ${fixed(rssBytes(service.pid) / 1e6, 0)} MB, ` +
      `the reference ${fixed(rssBytes(reference.service.pid) / 1e6, 0)} MB`,
  );
  const [rows, referenceRows] = [await eventsPerAnswer(grown), await eventsPerAnswer(reference)];
  console.log(
    `events per answer (${ROW_SAMPLES} random picks each): wallet-filtered ${fixed(rows.wallet)}, ` +
      `an NFT's ${fixed(rows.nft)}; on the reference ${fixed(referenceRows.wallet)} and ${fixed(referenceRows.nft)}`,
  );
  const figures = {
    label,
    wallets: world.wallets.length,
    size,
    growSeconds,
    hello: helloResult,
    loads: results,
    reference: references,
    kept: keptFigures,
    p99Growth: p99Figures,
  };
  if (!withOperations) return figures;
  const startupMs = restarted ? bulkStartupMs : await restart(service);
  const startupCpuMs = restarted ? bulkStartupCpuMs : cpuSeconds(service.pid) * 1000;
  const ops = await operations(service, startupMs, startupCpuMs);
  console.log(
    `start-up ${fixed(ops.startupMs, 0)} ms (CPU ${fixed(ops.startupCpuMs, 0)} ms); db:check ${fixed(ops.checkMs, 0)} ms (${ops.checkOk ? 'held' : 'FAILED'}); ` +
      `backup ${fixed(ops.backupMs, 0)} ms, ${fixed(ops.backupBytes / 1e6)} MB`,
  );
  storageTable(size);
  return { ...figures, ops };
}

/**
 * One HTTP load on a service that finished the previous one (a slow read's requests still in the
 * service when its run ends would otherwise count against the next load), after a 1 s warm-up; with
 * `ledgerName`, on PostgreSQL, the blocks it read and hit per answer, printed under that name, and
 * with `statements` (`--pg-statements`) the statements that cost them.
 */
async function measureLoad(
  service: Service,
  load: LoadOptions,
  ledgerName?: string,
  statements = false,
): Promise<LoadResult> {
  await settle(service);
  await warmUp(load, 1);
  await settle(service);
  // A PostgreSQL session reports its statistics at most once a second, and 10 s after it went idle.
  const before = ledgerName === undefined ? undefined : await ioCounters(service);
  const statementsBefore =
    before && statements ? await statementCounters(service.env.DATABASE_URL) : undefined;
  const gcBefore = ledgerName === undefined ? undefined : await gcCounters(service.baseUrl);
  const result = await runLoad(load);
  const gcAfter = gcBefore && (await gcCounters(service.baseUrl));
  const statementsAfter = statementsBefore && (await statementCounters(service.env.DATABASE_URL));
  const gc = gcBefore && gcAfter && gcPerAnswer(gcBefore, gcAfter, result.ok);
  if (gc) console.log(`${result.label}, on the ${ledgerName} ledger: ${gc}`);
  if (before) {
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const io = ioPerAnswer(before, await ioCounters(service), result.ok);
    if (io) console.log(`${result.label}, per answer on the ${ledgerName} ledger: ${io}`);
  }
  if (statementsBefore && statementsAfter)
    for (const line of statementsPerAnswer(statementsBefore, statementsAfter, result.ok)) console.log(line);
  return result;
}

/**
 * `--asset-views`: every wallet of the ledger listed twice (`no-cache`, as the measured load), so that
 * each listing cache has kept the views it has room for (its doorkeeper keeps a view at the second
 * sighting).
 */
async function listEveryWalletTwice({ service, world }: Ledger): Promise<void> {
  const headers = { ...world.studio.headers, 'cache-control': 'no-cache' };
  const started = performance.now();
  for (let pass = 0; pass < 2; pass++)
    await forEachLimit(world.wallets, 20, async (wallet) => {
      const response = await fetch(`${service.baseUrl}/wallets/${wallet}/assets?limit=10`, { headers });
      if (!response.ok) throw new Error(`listing wallet ${wallet}: ${response.status}`);
      await response.arrayBuffer();
    });
  console.log(
    `(${world.wallets.length.toLocaleString('en-US')} wallets listed twice in ${fixed((performance.now() - started) / 1000)} s)`,
  );
}

const pickFrom = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)];
/** The wallet-filtered and the NFT-filtered event reads, of a random wallet or NFT. */
const walletEventsPath = (world: World) => `/api/v1/events?walletId=${pickFrom(world.wallets)}&limit=20`;
const nftEventsPath = (world: World) => `/api/v1/events?assetId=${pickFrom(world.nfts)}&limit=20`;

/** Answers sampled by `eventsPerAnswer`. */
const ROW_SAMPLES = 50;

/**
 * The events an answer of the wallet- and NFT-filtered loads holds, averaged over random picks: a page
 * that fills costs more than one that finds a few events, and the two ledgers' answers differ (a
 * random one of 200,000 wallets has fewer events than one of 1,000; the bulk copy repeats the events
 * it copies, so an early wallet's or NFT's page fills).
 */
async function eventsPerAnswer({ service, world }: Ledger): Promise<{ wallet: number; nft: number }> {
  const average = async (path: () => string) => {
    let events = 0;
    for (let sample = 0; sample < ROW_SAMPLES; sample++)
      events += (await call<{ data: unknown[] }>(service.baseUrl, 'GET', path(), { session: world.studio }))
        .data.length;
    return events / ROW_SAMPLES;
  };
  return {
    wallet: await average(() => walletEventsPath(world)),
    nft: await average(() => nftEventsPath(world)),
  };
}

const REPLAYS = 'WS subscribe, replay from a random point';

/**
 * Whether `--loads` (any load when absent) names the load labelled `label`: the label holds one of its
 * `|`-separated texts (`--loads "no-cache|events (an NFT)"`: a load after the ones it may follow).
 */
const wanted = (label: string, options: BenchOptions) =>
  options.loads === undefined ||
  options.loads
    .toLowerCase()
    .split('|')
    .some((text) => label.toLowerCase().includes(text.trim()));

/** WebSocket subscribes replaying a random wallet's events from a random point before `newest`. */
async function replays(
  { service, world }: Ledger,
  options: BenchOptions,
  newest: number,
): Promise<LoadResult> {
  await settle(service);
  return runReplays({
    label: REPLAYS,
    wsUrl: `${service.baseUrl.replace(/^http/, 'ws')}/ws`,
    headers: world.studio.headers,
    connections: Math.min(options.connections, 20),
    durationSeconds: options.durationSeconds,
    next: () => ({
      walletId: pickFrom(world.wallets),
      lastEventId: Math.max(0, newest - Math.floor(Math.random() * Math.min(REPLAY_WINDOW, newest))),
    }),
  });
}

async function restart(service: Service): Promise<number> {
  if (!service.restart) throw new Error('the service cannot be restarted');
  return service.restart();
}

/** db:check and a backup of the service's database, timed, while the service runs idle. */
async function operations(service: Service, startupMs: number, startupCpuMs: number): Promise<OpTimes> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...service.env };
  let started = performance.now();
  let checkOk = true;
  try {
    await run(NODE, ['src/cli/db-check.ts'], { cwd: ROOT, env, maxBuffer: 64 << 20 });
  } catch (error) {
    checkOk = false;
    // Violations are printed on stderr (src/cli/db-check.ts), what held on stdout: both, cut short.
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    console.log(`db:check: ${`${stdout ?? ''}${stderr ?? ''}`.slice(0, 4000) || error}`);
  }
  const checkMs = performance.now() - started;
  const dir = mkdtempSync(path.join(tmpdir(), 'gats-scale-backup-'));
  try {
    const file = path.join(dir, `backup-${randomUUID()}`);
    started = performance.now();
    if (service.kind === 'postgres')
      await run('pg_dump', ['-Fc', '-f', file, service.env.DATABASE_URL], { env });
    else await run(NODE, ['src/cli/db-backup.ts', file], { cwd: ROOT, env });
    return {
      startupMs,
      startupCpuMs,
      checkMs,
      checkOk,
      backupMs: performance.now() - started,
      backupBytes: statSync(file).size,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Writes to disk what the growth left in the page cache (`sync`), so that the kernel's write-back of
 * gigabytes of growth does not share the CPU and the disk with the stage's loads: a stage measures the
 * service at that size, not the flush of how it got there.
 */
async function flushWrites(): Promise<void> {
  const unwritten = unwrittenBytes();
  const started = performance.now();
  await run('sync', []);
  console.log(
    `(sync: ${fixed(unwritten / 1e6)} MB not yet on disk, written in ${fixed((performance.now() - started) / 1000)} s)`,
  );
}

/**
 * Runs a load and prints where the machine's CPU went meanwhile, as shares of its cores: the server
 * under load, the load generator (this process), the service (idle during Koa hello), the rest of
 * the machine, and time the host gave to other machines (steal) or spent waiting on the disk.
 */
async function machineWhile(
  service: Service,
  serverPid: number,
  load: () => Promise<LoadResult>,
): Promise<LoadResult> {
  const before = {
    machine: machineCpu(),
    self: process.cpuUsage(),
    server: cpuSeconds(serverPid),
    service: cpuSeconds(service.pid),
  };
  const result = await load();
  const machine = machineCpu();
  const total = machine.total - before.machine.total;
  const self = process.cpuUsage(before.self);
  // /proc/stat counts in USER_HZ (100 per second), as the per-process counters do.
  const shares = {
    server: (cpuSeconds(serverPid) - before.server) * 100,
    'load generator': ((self.user + self.system) / 1e6) * 100,
    service: (cpuSeconds(service.pid) - before.service) * 100,
  };
  const rest =
    machine.busy - before.machine.busy - Object.values(shares).reduce((sum, ticks) => sum + ticks, 0);
  const percent = (ticks: number) => `${fixed((ticks / total) * 100)}%`;
  console.log(
    `(${result.label}: machine CPU ${Object.entries(shares)
      .map(([name, ticks]) => `${name} ${percent(ticks)}`)
      .join(', ')}, the rest ${percent(rest)}, iowait ${percent(machine.iowait - before.machine.iowait)}, ` +
      `steal ${percent(machine.steal - before.machine.steal)})`,
  );
  return result;
}

/**
 * Waits (up to 2 minutes) until the service used under 15% of a core for a whole second: the previous
 * load's requests are done and the relay has read what the growth wrote (its CPU is the service's
 * own, whatever else the shared machine runs; a latency bound on /healthz moved with that load).
 */
async function settle(service: Service): Promise<void> {
  const started = performance.now();
  for (;;) {
    const before = cpuSeconds(service.pid);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (cpuSeconds(service.pid) - before < 0.15 || performance.now() - started > 120_000) break;
  }
  const waited = (performance.now() - started) / 1000;
  if (waited > 1.5) console.log(`(waited ${fixed(waited)} s for the service to go idle)`);
}

/** The measured HTTP loads of a stage, over the wallets and NFTs grown so far. */
function httpLoads(
  service: Service,
  world: World,
  newestEvent: number,
  options: BenchOptions,
): LoadOptions[] {
  const { studio, wallets, nfts } = world;
  const hot = wallets.slice(0, HOT_WALLETS);
  const base = {
    url: service.baseUrl,
    connections: options.connections,
    durationSeconds: options.durationSeconds,
    serverPid: service.pid,
  };
  const noCache = { ...studio.headers, 'cache-control': 'no-cache' };
  const randomGet = (label: string, path: () => string, headers: Record<string, string>): LoadOptions => ({
    ...base,
    label,
    headers,
    setupClient: (client) =>
      client.setRequests([
        { method: 'GET', headers, setupRequest: (request) => ({ ...request, path: path() }) },
      ]),
  });
  const randomPost = (label: string, path: string, body: () => unknown): LoadOptions => {
    const headers = { ...studio.headers, 'content-type': 'application/json' };
    return {
      ...base,
      label,
      method: 'POST',
      headers,
      setupClient: (client) =>
        client.setRequests([
          {
            method: 'POST',
            headers,
            setupRequest: (request) => ({ ...request, path, body: JSON.stringify(body()) }),
          },
        ]),
    };
  };
  const randomPoint = () => Math.floor(Math.random() * newestEvent);
  return [
    randomGet(
      'wallet reads, cached (100 wallets)',
      () => `/wallets/${pickFrom(hot)}/assets?limit=10`,
      studio.headers,
    ),
    randomGet('wallet reads, no-cache', () => `/wallets/${pickFrom(wallets)}/assets?limit=10`, noCache),
    randomGet('GET /assets/{id} (an NFT), no-cache', () => `/assets/${pickFrom(nfts)}`, noCache),
    randomGet(
      'event pages from a random point',
      () => `/api/v1/events?after=${randomPoint()}&limit=100`,
      studio.headers,
    ),
    randomGet('wallet-filtered events', () => walletEventsPath(world), studio.headers),
    randomGet('asset-filtered events (an NFT)', () => nftEventsPath(world), studio.headers),
    randomGet(
      'asset-filtered events (a currency) from a random point',
      () => `/api/v1/events?assetId=${CURRENCIES[1]}&after=${randomPoint()}&limit=20`,
      studio.headers,
    ),
    randomPost('transfers to random wallets', '/api/v1/transfer', () => ({
      assetId: CURRENCIES[0],
      from: studio.wallet,
      to: pickFrom(wallets),
      amount: '0.01',
    })),
    randomPost(
      `batch mints (${LOAD_MINT_WALLETS * 5} items)`,
      `/api/v1/collections/${COLLECTION}/mint/batch`,
      () => ({
        items: airdropItems(Array.from({ length: LOAD_MINT_WALLETS }, () => randomAddress())),
      }),
    ),
  ];
}

function storageTable(size: Sizes): void {
  const perHolding = (bytes: number) => fixed(bytes / Math.max(1, size.holdings), 0);
  const perEvent = (bytes: number) => fixed(bytes / Math.max(1, size.events), 0);
  console.log(
    `storage: ${fixed(size.databaseBytes / 1e6)} MB, ${perHolding(size.databaseBytes)} B per holding; ` +
      `outbox ${fixed(size.eventBytes / 1e6)} MB, ${perEvent(size.eventBytes)} B per event`,
  );
  table(
    ['table', 'rows MB', 'indexes MB', 'B per holding', 'B per event'],
    byTable(size.relations)
      .slice(0, 10)
      .map((entry) => [
        entry.table,
        fixed(entry.rows / 1e6),
        fixed(entry.indexes / 1e6),
        perHolding(entry.rows + entry.indexes),
        perEvent(entry.rows + entry.indexes),
      ]),
  );
  table(
    ['largest relations', 'of table', 'MB'],
    size.relations
      .slice(0, 12)
      .map((relation) => [relation.name, relation.table, fixed(relation.bytes / 1e6)]),
  );
}

/** A measured stage's operations (every stage but the one after VACUUM has them). */
function opsOf(stage: StageFigures): OpTimes {
  if (!stage.ops) throw new Error(`stage ${stage.label} has no operations measured`);
  return stage.ops;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** What a load on the grown ledger kept of its rate on the reference ledger. */
const kept = (at: LoadResult, reference: LoadResult) => at.okPerSecond / reference.okPerSecond;
/** How many times the reference's p99 a load's p99 on the grown ledger is (autocannon's are whole ms). */
const p99Growth = (at: LoadResult, reference: LoadResult) => at.p99 / Math.max(1, reference.p99);

/** Each load's rate, latency and share of Koa hello at every stage, and what it kept of the reference's. */
function summary(server: string, stages: StageFigures[]): void {
  const [first] = stages;
  // The targets are judged on the last stage as the service left it; the one after VACUUM is shown beside.
  const measured = stages.filter((stage) => !stage.afterVacuum);
  const last = measured[measured.length - 1];
  const vacuumed = stages.find((stage) => stage.afterVacuum);
  console.log(
    `\n=== scale on ${server}: summary (kept = req/s at the stage / req/s on the ${first.label} reference just before, ` +
      `p99 x likewise, medians of the rounds; req/s and p99 of the median round) ===`,
  );
  const rows: (string | number)[][] = [];
  for (const [index, load] of first.loads.entries()) {
    for (const stage of stages) {
      const result = stage.loads[index];
      const reference = stage.reference[index];
      rows.push([
        `${load.label} @ ${stage.label}`,
        fixed(result.okPerSecond, 0),
        result.p50,
        result.p99,
        `${fixed((result.okPerSecond / stage.hello.okPerSecond) * 100)}%`,
        fixed(reference.okPerSecond, 0),
        reference.p99,
        fixed(stage.kept[index], 2),
        fixed(stage.p99Growth[index], 1),
        Object.keys(result.failures).length === 0 ? '0' : JSON.stringify(result.failures),
      ]);
    }
  }
  table(
    [
      'load',
      'ok req/s',
      'p50 ms',
      'p99 ms',
      'of Koa hello',
      'reference req/s',
      'reference p99 ms',
      'kept',
      'p99 x',
      'failures',
    ],
    rows,
  );
  console.log('');
  table(
    [
      'stage',
      'holdings',
      'events',
      'grown s',
      'start-up ms',
      'start-up CPU ms',
      'db:check ms',
      'backup ms',
      'backup MB',
      'database MB',
      'B/holding',
      'outbox MB',
      'B/event',
    ],
    measured.map((stage) => [
      stage.label,
      stage.size.holdings,
      stage.size.events,
      fixed(stage.growSeconds),
      fixed(opsOf(stage).startupMs, 0),
      fixed(opsOf(stage).startupCpuMs, 0),
      `${fixed(opsOf(stage).checkMs, 0)}${opsOf(stage).checkOk ? '' : ' FAILED'}`,
      fixed(opsOf(stage).backupMs, 0),
      fixed(opsOf(stage).backupBytes / 1e6),
      fixed(stage.size.databaseBytes / 1e6),
      fixed(stage.size.databaseBytes / stage.size.holdings, 0),
      fixed(stage.size.eventBytes / 1e6),
      fixed(stage.size.eventBytes / stage.size.events, 0),
    ]),
  );
  const grown = `${first.size.holdings.toLocaleString('en-US')} → ${last.size.holdings.toLocaleString('en-US')} holdings, ${last.size.events.toLocaleString('en-US')} events, beside the reference`;
  for (const [index, load] of first.loads.entries()) {
    const result = last.loads[index];
    // A load at a stage against the same load on the reference ledger, run just before it.
    const figures = (stage: StageFigures) => {
      const at = stage.loads[index];
      const reference = stage.reference[index];
      return [
        { name: 'req/s', value: Math.round(at.okPerSecond), unit: '' },
        { name: 'p50', value: at.p50, unit: 'ms' },
        { name: 'p99', value: at.p99, unit: 'ms' },
        { name: 'reference req/s', value: Math.round(reference.okPerSecond), unit: '' },
        { name: 'reference p99', value: reference.p99, unit: 'ms' },
        { name: 'kept', value: round4(stage.kept[index]), unit: '%' },
        { name: 'p99 growth', value: round1(stage.p99Growth[index]), unit: 'x' },
      ];
    };
    if (vacuumed) {
      const again = vacuumed.loads[index];
      record({
        benchmark: 'scale',
        scenario: `${load.label}, ${grown}, after VACUUM (ANALYZE), ${server}`,
        koaRatio: round4(again.okPerSecond / vacuumed.hello.okPerSecond),
        figures: figures(vacuumed),
      });
    }
    record({
      benchmark: 'scale',
      scenario: `${load.label}, ${grown}, ${server}`,
      koaRatio: round4(result.okPerSecond / last.hello.okPerSecond),
      figures: figures(last),
      targets: [
        { figure: 'kept', atLeast: 0.8, source: 'issue 34' },
        { figure: 'p99 growth', atMost: 2, source: 'issue 34' },
      ],
    });
  }
  record({
    benchmark: 'scale',
    scenario: `operations, ${grown}, ${server}`,
    figures: [
      { name: 'start-up', value: Math.round(opsOf(last).startupMs), unit: 'ms' },
      { name: 'start-up growth', value: round1(opsOf(last).startupMs / opsOf(first).startupMs), unit: 'x' },
      { name: 'start-up CPU', value: Math.round(opsOf(last).startupCpuMs), unit: 'ms' },
      // A check that failed (a finding, out of memory say) is recorded as such, not as a duration.
      {
        name: opsOf(last).checkOk ? 'db:check' : 'db:check FAILED after',
        value: Math.round(opsOf(last).checkMs),
        unit: 'ms',
      },
      { name: 'backup', value: Math.round(opsOf(last).backupMs), unit: 'ms' },
    ],
  });
  // Bytes per holding from the last stage grown through the API (a bulk-grown log would count its
  // events against the same holdings); bytes per event from the largest log.
  const ledger = measured.filter((stage) => !stage.bulkLog).at(-1) ?? last;
  record({
    benchmark: 'scale',
    scenario: `storage at ${ledger.size.holdings.toLocaleString('en-US')} holdings and ${last.size.events.toLocaleString('en-US')} events, ${server}`,
    figures: [
      {
        name: 'database per holding',
        value: Math.round(ledger.size.databaseBytes / ledger.size.holdings),
        unit: 'B',
      },
      { name: 'outbox per event', value: Math.round(last.size.eventBytes / last.size.events), unit: 'B' },
    ],
    targets: [{ figure: 'database per holding', atMost: 1024, source: 'issue 34' }],
  });
}

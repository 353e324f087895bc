// Scale (issue 34): the same loads on a ledger grown in stages through the service's own write path
// (the studio's airdrop: each new wallet gets 2 currencies and 3 NFTs from batch mints, 100 items a
// batch), measured at each stage beside Koa hello, each as a share of its figure at the first
// (smallest) stage of the same run:
// - wallet reads, `Cache-Control: no-cache`, of a random airdropped wallet;
// - event pages from a random point (`/api/v1/events?after=<random>&limit=100`);
// - wallet-filtered events (`/api/v1/events?walletId=<random>&limit=20`, from the start of the log);
// - transfers of a currency from the studio to random airdropped wallets;
// and the database's bytes per holding and per event. Statistics as the service leaves them: no
// ANALYZE (this machine's PostgreSQL runs without autovacuum).
//
//   npm run bench -- scale --db both --stages 1000,100000 --duration 5 --connections 20
//
// `--stages` are wallet totals, smallest first; each stage airdrops the wallets it adds.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import {
  call,
  createCollection,
  createCurrency,
  createUser,
  mint,
  NFT_METADATA,
  type Session,
} from './lib/api.ts';
import { forEachLimit } from './lib/concurrency.ts';
import type { DbKind } from './lib/database.ts';
import { startHello } from './lib/hello.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { fixed, heading, loadTable, table } from './lib/report.ts';
import { type Service, startService } from './lib/service.ts';
import { BetterSqlite3, pg } from './lib/untyped.ts';

const COLLECTION = 'bench-scale';
const CURRENCIES = ['scale-gold', 'scale-gems'];
const NFTS_PER_WALLET = 3;
/** Items per batch mint (the contract's maximum): 20 wallets of 5 items. */
const BATCH_ITEMS = 100;
/** Batch mints in flight while the ledger grows. */
const AIRDROP_CONCURRENCY = 4;

interface StageFigures {
  wallets: number;
  holdings: number;
  events: number;
  airdropSeconds: number;
  hello: LoadResult;
  loads: LoadResult[];
  databaseBytes: number;
  eventBytes: number | null;
}

export async function scale(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) await scaleOn(kind, options);
}

async function scaleOn(kind: DbKind, options: BenchOptions): Promise<void> {
  const hello = await startHello();
  const service = await startService(kind);
  const stages: StageFigures[] = [];
  try {
    heading(`scale on ${kind}`, {
      stages: options.stages.join(', '),
      'items per wallet': CURRENCIES.length + NFTS_PER_WALLET,
      connections: options.connections,
      'seconds per run': options.durationSeconds,
    });
    const studio = await createUser(service, 'studio');
    await createCollection(service, studio, COLLECTION);
    for (const currency of CURRENCIES) await createCurrency(service, studio, currency, COLLECTION);
    // The transfers' source: plenty of the first currency in the studio's own wallet.
    await mint(service, studio, CURRENCIES[0], studio.wallet, '1000000000');
    const wallets: string[] = [];
    for (const total of options.stages) {
      const started = performance.now();
      const added = Array.from({ length: Math.max(0, total - wallets.length) }, () => randomAddress());
      await airdrop(service, studio, added);
      wallets.push(...added);
      const airdropSeconds = (performance.now() - started) / 1000;
      const size = await sizes(service);
      console.log(
        `\n--- ${wallets.length} wallets: ${size.holdings} holdings, ${size.events} events ` +
          `(airdrop of ${added.length} wallets: ${fixed(airdropSeconds)} s) ---`,
      );
      const loads = loadsOf(service, studio, wallets, size.newestEvent, options);
      const helloLoad: LoadOptions = {
        label: 'Koa hello GET /',
        url: `${hello.baseUrl}/`,
        connections: options.connections,
        durationSeconds: options.durationSeconds,
        serverPid: hello.pid,
      };
      await warmUp(helloLoad, 1);
      const helloResult = await runLoad(helloLoad);
      const results: LoadResult[] = [];
      for (const load of loads) {
        // Each load on a service that finished the previous one: a slow read's requests still in
        // the service when its run ends would otherwise count against the next load.
        await settle(service);
        await warmUp(load, 1);
        await settle(service);
        results.push(await runLoad(load));
      }
      loadTable([helloResult, ...results]);
      stages.push({
        wallets: wallets.length,
        holdings: size.holdings,
        events: size.events,
        airdropSeconds,
        hello: helloResult,
        loads: results,
        databaseBytes: size.databaseBytes,
        eventBytes: size.eventBytes,
      });
    }
    summary(kind, stages);
  } finally {
    await service.stop();
    await hello.stop();
  }
}

/** Waits (up to 2 minutes) until `/healthz` answers within 50 ms twice in a row. */
async function settle(service: Service): Promise<void> {
  const started = performance.now();
  let quick = 0;
  while (quick < 2 && performance.now() - started < 120_000) {
    const sent = performance.now();
    await (await fetch(`${service.baseUrl}/healthz`)).arrayBuffer();
    quick = performance.now() - sent < 50 ? quick + 1 : 0;
    if (quick < 2) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const waited = (performance.now() - started) / 1000;
  if (waited > 1) console.log(`(waited ${fixed(waited)} s for the service to finish the previous load)`);
}

function randomAddress(): string {
  return `0x${randomBytes(20).toString('hex')}`;
}

/** Every wallet gets each currency and NFTS_PER_WALLET NFTs, by batch mints of BATCH_ITEMS items. */
async function airdrop(service: Service, studio: Session, wallets: string[]): Promise<void> {
  const items = wallets.flatMap((to) => [
    ...CURRENCIES.map((currency) => ({ to, currency, amount: '100' })),
    ...Array.from({ length: NFTS_PER_WALLET }, (_, index) => ({
      to,
      nft: { name: `Starter item ${index + 1}`, metadata: NFT_METADATA },
    })),
  ]);
  const batches: (typeof items)[] = [];
  for (let start = 0; start < items.length; start += BATCH_ITEMS)
    batches.push(items.slice(start, start + BATCH_ITEMS));
  let done = 0;
  let reported = performance.now();
  await forEachLimit(batches, AIRDROP_CONCURRENCY, async (batch) => {
    await call(service.baseUrl, 'POST', `/api/v1/collections/${COLLECTION}/mint/batch`, {
      session: studio,
      body: { items: batch },
    });
    done++;
    if (performance.now() - reported > 30_000) {
      reported = performance.now();
      console.log(`airdrop: ${done} of ${batches.length} batches`);
    }
  });
}

/** The measured loads of a stage, over the wallets airdropped so far. */
function loadsOf(
  service: Service,
  studio: Session,
  wallets: string[],
  newestEvent: number,
  options: BenchOptions,
): LoadOptions[] {
  const pick = () => wallets[Math.floor(Math.random() * wallets.length)];
  const base = {
    url: service.baseUrl,
    connections: options.connections,
    durationSeconds: options.durationSeconds,
    serverPid: service.pid,
  };
  const randomGet = (label: string, path: () => string, headers: Record<string, string>): LoadOptions => ({
    ...base,
    label,
    headers,
    setupClient: (client) =>
      client.setRequests([
        { method: 'GET', headers, setupRequest: (request) => ({ ...request, path: path() }) },
      ]),
  });
  const postHeaders = { ...studio.headers, 'content-type': 'application/json' };
  return [
    randomGet('wallet reads, no-cache', () => `/wallets/${pick()}/assets?limit=10`, {
      ...studio.headers,
      'cache-control': 'no-cache',
    }),
    randomGet(
      'event pages from a random point',
      () => `/api/v1/events?after=${Math.floor(Math.random() * newestEvent)}&limit=100`,
      studio.headers,
    ),
    randomGet('wallet-filtered events', () => `/api/v1/events?walletId=${pick()}&limit=20`, studio.headers),
    {
      ...base,
      label: 'transfers to random wallets',
      method: 'POST',
      headers: postHeaders,
      setupClient: (client) =>
        client.setRequests([
          {
            method: 'POST',
            headers: postHeaders,
            setupRequest: (request) => ({
              ...request,
              path: '/api/v1/transfer',
              body: JSON.stringify({
                assetId: CURRENCIES[0],
                from: studio.wallet,
                to: pick(),
                amount: '0.01',
              }),
            }),
          },
        ]),
    },
  ];
}

interface Sizes {
  holdings: number;
  events: number;
  newestEvent: number;
  /** The whole database (PostgreSQL) or file with its WAL (SQLite). */
  databaseBytes: number;
  /** outbox_event with its indexes (PostgreSQL; SQLite when its dbstat table is compiled in). */
  eventBytes: number | null;
}

async function sizes(service: Service): Promise<Sizes> {
  const counts =
    'select (select count(*) from holding) as holdings, (select count(*) from outbox_event) as events, ' +
    '(select max(id) from outbox_event) as newest';
  if (service.kind === 'postgres') {
    const client = new pg.Client({ connectionString: service.env.DATABASE_URL });
    await client.connect();
    try {
      const query = async (sql: string) =>
        ((await client.query(sql)) as unknown as { rows: Record<string, string | number>[] }).rows[0];
      const count = await query(counts);
      const size = await query(
        "select pg_database_size(current_database()) as db, pg_total_relation_size('outbox_event') as events",
      );
      return {
        holdings: Number(count.holdings),
        events: Number(count.events),
        newestEvent: Number(count.newest),
        databaseBytes: Number(size.db),
        eventBytes: Number(size.events),
      };
    } finally {
      await client.end();
    }
  }
  const path = service.env.SQLITE_PATH;
  const db = new BetterSqlite3(path, { timeout: 5000 }) as unknown as {
    prepare(sql: string): { get(): Record<string, number> };
    close(): void;
  };
  try {
    const count = db.prepare(counts).get();
    let eventBytes: number | null = null;
    try {
      eventBytes = db
        .prepare(
          "select sum(pgsize) as bytes from dbstat where name = 'outbox_event' or name in " +
            "(select name from sqlite_master where type = 'index' and tbl_name = 'outbox_event')",
        )
        .get().bytes;
    } catch {
      // dbstat is not compiled in: the whole file only.
    }
    const fileBytes = (file: string) => {
      try {
        return statSync(file).size;
      } catch {
        return 0;
      }
    };
    return {
      holdings: count.holdings,
      events: count.events,
      newestEvent: count.newest,
      databaseBytes: fileBytes(path) + fileBytes(`${path}-wal`),
      eventBytes,
    };
  } finally {
    db.close();
  }
}

/** Each load's rate, latency and share of Koa hello at every stage, and what it kept of stage 1. */
function summary(kind: DbKind, stages: StageFigures[]): void {
  const [first] = stages;
  console.log(
    `\n=== scale on ${kind}: summary (kept = req/s at the stage / req/s at ${first.wallets} wallets) ===`,
  );
  const rows: (string | number)[][] = [];
  for (const [index, load] of first.loads.entries()) {
    for (const stage of stages) {
      const result = stage.loads[index];
      rows.push([
        `${load.label} @ ${stage.wallets} wallets`,
        fixed(result.okPerSecond, 0),
        result.p50,
        result.p99,
        `${fixed((result.okPerSecond / stage.hello.okPerSecond) * 100)}%`,
        fixed(result.okPerSecond / first.loads[index].okPerSecond, 2),
        Object.keys(result.failures).length === 0 ? '0' : JSON.stringify(result.failures),
      ]);
    }
  }
  table(['load', 'ok req/s', 'p50 ms', 'p99 ms', 'of Koa hello', 'kept', 'failures'], rows);
  console.log('');
  table(
    [
      'wallets',
      'holdings',
      'events',
      'airdrop s',
      'database MB',
      'bytes/holding',
      'outbox MB',
      'bytes/event',
    ],
    stages.map((stage) => [
      stage.wallets,
      stage.holdings,
      stage.events,
      fixed(stage.airdropSeconds),
      fixed(stage.databaseBytes / 1e6),
      fixed(stage.databaseBytes / stage.holdings, 0),
      stage.eventBytes === null ? '-' : fixed(stage.eventBytes / 1e6),
      stage.eventBytes === null ? '-' : fixed(stage.eventBytes / stage.events, 0),
    ]),
  );
}

// One soak run: one service instance on a fresh database, a ledger with players, NFTs and prices, N
// WebSocket clients subscribed to every event, and the mixed HTTP load for the duration. Every window
// it records throughput, p99 and the service's RSS; at the end it compares the first and last thirds.

import { setUpLedger } from '../../chaos/lib/ledger-setup.ts';
import { call, createNft, createUser } from '../../lib/api.ts';
import type { DbKind } from '../../lib/database.ts';
import { megabytes as mb, rssBytes } from '../../lib/proc.ts';
import { startService } from '../../lib/service.ts';
import { startMixedLoad, WindowStats } from './mixed-load.ts';
import { startWsFleet, type WsFleet } from './ws-fleet.ts';

export interface SoakOptions {
  db: DbKind;
  durationSeconds: number;
  intervalSeconds: number;
  /** WebSocket clients, each subscribed to every event. */
  clients: number;
  /** Offered HTTP requests per second (reads and writes mixed). */
  rate: number;
  /** Players holding the currencies (registration is slow: fewer for a smoke run). */
  players: number;
  log: (line: string) => void;
}

export interface WindowFigures {
  atSeconds: number;
  throughput: number;
  p99: number;
  rssBytes: number;
  deliveriesPerSecond: number;
  skipped: number;
}

export interface ThirdFigures {
  throughput: number;
  p50: number;
  p99: number;
}

export interface SoakReport {
  options: Omit<SoakOptions, 'log'>;
  requests: number;
  serverErrors: number;
  /** Up to 20 examples of answers other than 2xx, 409 and 429, and of requests without an answer. */
  unexpected: string[];
  unexpectedCount: number;
  statuses: Record<string, number>;
  deliveries: number;
  /** WebSocket closes the clients did not ask for, by code. */
  unexpectedCloses: Record<string, number>;
  rssBefore: number;
  rssStart: number;
  rssEnd: number;
  windows: WindowFigures[];
  thirds: ThirdFigures[];
  failures: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { log, ...settings } = options;
  const service = await startService(options.db);
  let fleet: WsFleet | undefined;
  try {
    log(`service (${options.db}) up at ${service.baseUrl}, pid ${service.pid}; setting up`);
    const ledger = await setUpLedger(service, { players: options.players, currencies: 2 });
    const nfts: string[] = [];
    for (let index = 0; index < 10; index++) {
      nfts.push(
        await createNft(
          service,
          ledger.players[index % ledger.players.length],
          undefined, // players mint into their personal collections (only its studio mints into ledger.collection)
          `Soak item ${index}`,
        ),
      );
    }
    for (const currency of ledger.currencies) {
      await call(service.baseUrl, 'POST', `/api/v1/price/${currency}`, {
        session: ledger.oracle,
        body: { price: '0.0125', currency: 'USD', source: 'soak-oracle' },
      });
    }
    const rssBefore = rssBytes(service.pid);

    const watcher = await createUser(service);
    fleet = await startWsFleet(
      `${service.baseUrl.replace(/^http/, 'ws')}/ws`,
      options.clients,
      watcher.headers,
    );
    const rssStart = rssBytes(service.pid);
    log(
      `${options.clients} WebSocket clients subscribed; RSS ${mb(rssBefore)} before them, ${mb(rssStart)} with them`,
    );

    const load = startMixedLoad(
      {
        baseUrl: service.baseUrl,
        players: ledger.players,
        oracle: ledger.oracle,
        currencies: ledger.currencies,
        nfts,
      },
      options.rate,
      256,
    );
    const started = Date.now();
    const windows: WindowFigures[] = [];
    const thirdStats: WindowStats[] = [];
    const totals = { requests: 0, serverErrors: 0, unexpectedCount: 0 };
    const unexpected: string[] = [];
    const statuses: Record<string, number> = {};
    const absorb = (stats: WindowStats) => {
      totals.requests += stats.completed;
      totals.serverErrors += stats.serverErrors;
      totals.unexpectedCount += stats.unexpectedCount;
      unexpected.push(...stats.unexpected.slice(0, 20 - unexpected.length));
      for (const [key, count] of stats.statuses) statuses[key] = (statuses[key] ?? 0) + count;
    };
    let deliveriesSeen = 0;
    const closeWindow = (stats: WindowStats, seconds: number) => {
      absorb(stats);
      const figures: WindowFigures = {
        atSeconds: Math.round((Date.now() - started) / 1000),
        throughput: stats.completed / seconds,
        p99: stats.latency.percentile(0.99),
        rssBytes: rssBytes(service.pid),
        deliveriesPerSecond: ((fleet?.deliveries() ?? 0) - deliveriesSeen) / seconds,
        skipped: stats.skipped,
      };
      deliveriesSeen = fleet?.deliveries() ?? 0;
      windows.push(figures);
      log(
        `${String(figures.atSeconds).padStart(5)} s: ${figures.throughput.toFixed(1)} req/s, p99 ${figures.p99.toFixed(1)} ms, ` +
          `RSS ${mb(figures.rssBytes)}, ${figures.deliveriesPerSecond.toFixed(0)} WebSocket deliveries/s` +
          `${stats.skipped ? `, ${stats.skipped} not started (service behind)` : ''}` +
          `${stats.serverErrors ? `, ${stats.serverErrors} 5xx` : ''}`,
      );
    };

    // Windows end every `intervalSeconds`; thirds are kept apart for the flatness comparison.
    const end = started + options.durationSeconds * 1000;
    const thirdMs = (options.durationSeconds * 1000) / 3;
    let windowStart = started;
    let nextThird = started + thirdMs;
    for (;;) {
      await sleep(Math.min(windowStart + options.intervalSeconds * 1000, nextThird, end) - Date.now());
      if (Date.now() >= end) break;
      if (Date.now() >= nextThird) {
        thirdStats.push(load.third);
        load.third = new WindowStats();
        nextThird += thirdMs;
      }
      if (Date.now() >= windowStart + options.intervalSeconds * 1000) {
        closeWindow(load.rotate(), (Date.now() - windowStart) / 1000);
        windowStart = Date.now();
      }
    }
    closeWindow(await load.stop(), (Date.now() - windowStart) / 1000);
    thirdStats.push(load.third);
    const rssEnd = rssBytes(service.pid);
    const { deliveries, unexpectedCloses } = await fleet.stop();
    fleet = undefined;
    const thirdSeconds = options.durationSeconds / 3;
    const thirds = thirdStats.slice(0, 3).map((stats) => ({
      throughput: stats.completed / thirdSeconds,
      p50: stats.latency.percentile(0.5),
      p99: stats.latency.percentile(0.99),
    }));
    const report: SoakReport = {
      options: settings,
      ...totals,
      unexpected,
      statuses,
      deliveries,
      unexpectedCloses,
      rssBefore,
      rssStart,
      rssEnd,
      windows,
      thirds,
      failures: [],
    };
    report.failures = failuresOf(report);
    return report;
  } finally {
    await fleet?.stop();
    await service.stop();
  }
}

function failuresOf(report: SoakReport): string[] {
  const failures: string[] = [];
  if (report.serverErrors > 0) failures.push(`${report.serverErrors} 5xx answers`);
  if (report.unexpectedCount > 0) {
    failures.push(
      `${report.unexpectedCount} errors other than intended 4xx/429: ${report.unexpected.slice(0, 3).join('; ')}`,
    );
  }
  const [first, , last] = report.thirds;
  if (first && last && last.throughput < first.throughput * 0.5) {
    failures.push(
      `throughput fell by more than half: ${first.throughput.toFixed(1)} -> ${last.throughput.toFixed(1)} req/s`,
    );
  }
  return failures;
}

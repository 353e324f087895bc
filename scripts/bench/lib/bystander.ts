// The "bystander under a flood" measurement shared by the replay-flood and verify-flood benchmarks:
// a client reads GET /healthz and its own wallet (two autocannon loads at once) while another user
// floods the service, beside the same loads without a flood and against the Koa hello baseline
// (GET / twice at once). What is measured is the bystander's latency and throughput.
import type { Child } from '../../lib/children.ts';
import { cpuSeconds } from '../../lib/proc.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './load.ts';
import type { BenchOptions } from './options.ts';
import { type Measured, round4 } from './record.ts';
import { fixed, loadTable, table } from './report.ts';

/** A running flood: its counts (read when the loads end) and how to stop it. */
export interface Flood<C> {
  counts: C;
  stop(): void | Promise<void>;
}

export interface BystanderResult<C> {
  name: string;
  healthz: LoadResult;
  wallet: LoadResult;
  counts?: C;
  seconds: number;
  serviceCpuPercent: number;
  /** This process's CPU (the loads and the flood's clients). */
  loadCpuPercent: number;
}

export interface BystanderLoads {
  helloA: LoadOptions;
  helloB: LoadOptions;
  healthz: LoadOptions;
  wallet: LoadOptions;
}

/** The four loads (two on Koa hello, /healthz and the bystander's wallet), warmed up. */
export async function bystanderLoads(
  options: BenchOptions,
  helloUrl: string,
  serviceUrl: string,
  bystander: { wallet: string; headers: Record<string, string> },
): Promise<BystanderLoads> {
  const load = (label: string, url: string, headers?: Record<string, string>): LoadOptions => ({
    label,
    url,
    headers,
    connections: options.connections,
    durationSeconds: options.durationSeconds,
  });
  const loads = {
    helloA: load('Koa hello GET / (1 of 2)', `${helloUrl}/`),
    helloB: load('Koa hello GET / (2 of 2)', `${helloUrl}/`),
    healthz: load('GET /healthz', `${serviceUrl}/healthz`),
    wallet: load(
      'GET /wallets/{id}/assets',
      `${serviceUrl}/wallets/${bystander.wallet}/assets`,
      bystander.headers,
    ),
  };
  for (const target of [loads.helloA, loads.healthz, loads.wallet]) await warmUp(target);
  return loads;
}

/** Runs the two loads at once against `target`, with the flood (started `leadMs` before) going on meanwhile. */
export async function measureBystander<C>(
  target: Child,
  name: string,
  first: LoadOptions,
  second: LoadOptions,
  start?: () => Flood<C> | Promise<Flood<C>>,
  leadMs = 200,
): Promise<BystanderResult<C>> {
  const running = start ? await start() : undefined;
  if (running) await new Promise((resolve) => setTimeout(resolve, leadMs));
  const cpuBefore = process.cpuUsage();
  const targetBefore = cpuSeconds(target.pid);
  const started = performance.now();
  try {
    const [healthz, wallet] = await Promise.all([runLoad(first), runLoad(second)]);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      name,
      healthz,
      wallet,
      counts: running?.counts,
      seconds,
      serviceCpuPercent: ((cpuSeconds(target.pid) - targetBefore) / seconds) * 100,
      loadCpuPercent: ((cpu.user + cpu.system) / 1e6 / seconds) * 100,
    };
  } finally {
    await running?.stop();
  }
}

/**
 * A flood's record: the bystander's worst p99 with and without the flood, the flooded wallet reads'
 * rate, and that rate as a share of Koa hello's (which ran the same two loads).
 */
export function bystanderFigures<C>(
  hello: BystanderResult<C>,
  quiet: BystanderResult<C>,
  flooded: BystanderResult<C>,
): Pick<Measured, 'figures' | 'koaRatio'> {
  const worst = (result: BystanderResult<C>) => Math.max(result.healthz.p99, result.wallet.p99);
  return {
    koaRatio: round4(flooded.wallet.okPerSecond / hello.wallet.okPerSecond),
    figures: [
      { name: 'bystander p99', value: worst(flooded), unit: 'ms' },
      { name: 'without the flood', value: worst(quiet), unit: 'ms' },
      { name: 'bystander wallet reads', value: Math.round(flooded.wallet.okPerSecond), unit: 'req/s' },
    ],
  };
}

/**
 * Prints each case's loads, then one table of the bystander's p99 and throughput (as a share of
 * Koa hello) with the flood's own rows, then whether each flooded case met the p99 target.
 */
export function bystanderReport<C>(
  hello: BystanderResult<C>,
  results: BystanderResult<C>[],
  floodRows: (string | number)[][],
  targetP99Ms: number,
): void {
  loadTable([hello.healthz, hello.wallet]);
  for (const result of results) {
    console.log(`\n${result.name}:`);
    loadTable([result.healthz, result.wallet]);
  }
  console.log('');
  const share = (mine: LoadResult, baseline: LoadResult) =>
    `${fixed(mine.okPerSecond, 0)} (${fixed((100 * mine.okPerSecond) / baseline.okPerSecond)}%)`;
  table(
    ['', ...results.map((result) => result.name)],
    [
      ['/healthz p99 ms', ...results.map((r) => r.healthz.p99)],
      ['wallet read p99 ms', ...results.map((r) => r.wallet.p99)],
      ['/healthz req/s, % of Koa hello', ...results.map((r) => share(r.healthz, hello.healthz))],
      ['wallet req/s, % of Koa hello', ...results.map((r) => share(r.wallet, hello.wallet))],
      ...floodRows,
      ['service CPU (% of a core)', ...results.map((r) => fixed(r.serviceCpuPercent, 0))],
      ['load generator CPU (% of a core)', ...results.map((r) => fixed(r.loadCpuPercent, 0))],
    ],
  );
  for (const result of results.filter((r) => r.counts !== undefined)) {
    const worst = Math.max(result.healthz.p99, result.wallet.p99);
    console.log(
      `${result.name}: bystander p99 ${worst} ms (target < ${targetP99Ms} ms: ${worst < targetP99Ms ? 'met' : 'NOT met'})`,
    );
  }
}

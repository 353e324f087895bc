// Plain-text output of the benchmarks: what ran where, tables of figures, ratios against targets.
import os from 'node:os';
import type { LoadResult } from './load.ts';
import { markScenarioStart } from './record.ts';

export function heading(title: string, details: Record<string, string | number>): void {
  markScenarioStart();
  const cpus = os.cpus();
  const load = os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  console.log(`\n=== ${title} ===`);
  console.log(
    `machine: ${cpus.length} x ${cpus[0]?.model ?? 'unknown CPU'}, load average ${load}, Node ${process.version}` +
      ' (load generator, service and baseline share these cores)',
  );
  console.log(
    Object.entries(details)
      .map(([key, value]) => `${key}: ${value}`)
      .join(', '),
  );
}

export function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

export function table(headers: string[], rows: (string | number)[][]): void {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
  for (const [index, row] of cells.entries()) {
    console.log(
      row
        .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column])))
        .join('  '),
    );
    if (index === 0) console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  }
}

export function loadTable(results: LoadResult[]): void {
  const cpu = results.some((result) => result.serverCpuMicros !== undefined);
  table(
    ['target', 'ok req/s', 'mean ms', 'p50 ms', 'p99 ms', ...(cpu ? ['CPU us/req'] : []), 'failures'],
    results.map((result) => [
      result.label,
      fixed(result.okPerSecond, 0),
      fixed(result.mean, 2),
      result.p50,
      result.p99,
      ...(cpu ? [result.serverCpuMicros === undefined ? '-' : fixed(result.serverCpuMicros, 0)] : []),
      Object.keys(result.failures).length === 0 ? '0' : JSON.stringify(result.failures),
    ]),
  );
}

/**
 * "label: CPU us per answer by thread (system part): main 96 (14), WorkerThread 61 (2), V8Worker 8 (0)"
 * for each run that has it.
 */
export function threadTable(results: LoadResult[]): void {
  for (const result of results) {
    const threads = Object.entries(result.serverThreadMicros ?? {})
      .filter(([, micros]) => micros >= 0.5)
      .sort((a, b) => b[1] - a[1]);
    if (threads.length === 0) continue;
    console.log(
      `${result.label}: CPU us per answer by thread (system part): ${threads
        .map(
          ([name, micros]) =>
            `${name} ${fixed(micros, 0)} (${fixed(result.serverThreadSystemMicros?.[name] ?? 0, 0)})`,
        )
        .join(', ')}`,
    );
  }
}

/** "name: 41.2% of Koa hello (target >= 35%: met)". */
export function ratio(name: string, value: number, baseline: number, target?: number): void {
  const share = value / baseline;
  const verdict =
    target === undefined
      ? ''
      : ` (target >= ${fixed(target * 100, 0)}%: ${share >= target ? 'met' : 'NOT met'})`;
  console.log(`${name}: ${fixed(share * 100)}% of Koa hello${verdict}`);
}

/** The mean of the hello runs before and after: their spread shows how noisy the machine was. */
export function baselineOf(runs: LoadResult[]): number {
  const mean = runs.reduce((sum, run) => sum + run.okPerSecond, 0) / runs.length;
  if (runs.length > 1) {
    const spread =
      (Math.max(...runs.map((run) => run.okPerSecond)) - Math.min(...runs.map((run) => run.okPerSecond))) /
      mean;
    console.log(
      `Koa hello baseline: ${fixed(mean, 0)} req/s (mean of ${runs.length} runs, spread ${fixed(spread * 100)}%)`,
    );
  }
  return mean;
}

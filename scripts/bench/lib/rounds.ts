// Ratios to Koa hello from rounds that alternate the baseline and the targets, judged by their median.
// On a shared machine one run of each moves by a quarter or more from one minute to the next (other
// virtual machines take the cores: `vmstat` shows 5-25% steal); a target and the hello runs either
// side of it see the same minute, and the median of several rounds ignores the odd disturbed one.
import type { LoadResult } from './load.ts';
import { type Measured, round4 } from './record.ts';
import { fixed, loadTable, threadTable } from './report.ts';

export interface RoundTarget {
  label: string;
  /** One measured run (with whatever runs beside it, such as background writes). */
  run(): Promise<LoadResult>;
  /** The ratio it must reach (a share of Koa hello), if it has a target. */
  target?: number;
}

/** A target's figures over the rounds: medians, and the range of its share of Koa hello. */
export interface RoundFigures {
  label: string;
  /** Median share of Koa hello's rate, and the lowest and highest round's. */
  share: number;
  low: number;
  high: number;
  /** Median req/s, p99 ms and CPU µs per answer of the target's runs. */
  okPerSecond: number;
  p99: number;
  cpuMicros?: number;
}

/**
 * `rounds` rounds of hello then each target, and hello once more at the end; prints every run, then
 * each target's ratios: its rate over the mean of the hello runs before and after its round, and
 * hello's CPU per answer over its own (the rate ratio a machine with a core to spare for each would
 * show), as the median of the rounds with their range.
 */
export async function ratiosInRounds(
  rounds: number,
  hello: () => Promise<LoadResult>,
  targets: RoundTarget[],
): Promise<RoundFigures[]> {
  const hellos: LoadResult[] = [await hello()];
  const byTarget = targets.map(() => [] as LoadResult[]);
  const runs: LoadResult[] = [hellos[0]];
  for (let round = 1; round <= rounds; round++) {
    for (const [index, target] of targets.entries()) {
      const result = await target.run();
      byTarget[index].push(result);
      runs.push({ ...result, label: `${result.label} (round ${round})` });
    }
    const after = await hello();
    hellos.push(after);
    runs.push({ ...after, label: `${after.label} (after round ${round})` });
  }
  loadTable(runs);
  threadTable(runs);
  const helloRates = hellos.map((run) => run.okPerSecond);
  console.log(
    `Koa hello: ${helloRates.map((rate) => fixed(rate, 0)).join(', ')} req/s ` +
      `(spread ${fixed(((Math.max(...helloRates) - Math.min(...helloRates)) / median(helloRates)) * 100)}%)`,
  );
  const figures: RoundFigures[] = [];
  for (const [index, target] of targets.entries()) {
    const rates: number[] = [];
    const cpus: number[] = [];
    for (const [round, result] of byTarget[index].entries()) {
      const around = [hellos[round], hellos[round + 1]];
      rates.push(result.okPerSecond / mean(around.map((run) => run.okPerSecond)));
      const helloCpu = around.map((run) => run.serverCpuMicros).filter((micros) => micros !== undefined);
      if (result.serverCpuMicros !== undefined && helloCpu.length > 0)
        cpus.push(mean(helloCpu) / result.serverCpuMicros);
    }
    const share = median(rates);
    const verdict =
      target.target === undefined
        ? ''
        : ` (target >= ${fixed(target.target * 100, 0)}%: ${share >= target.target ? 'met' : 'NOT met'})`;
    console.log(`${target.label}: ${fixed(share * 100)}% of Koa hello${range(rates)}${verdict}`);
    if (cpus.length === rates.length)
      console.log(
        `${target.label}: ${fixed(median(cpus) * 100)}% of Koa hello by CPU per answer${range(cpus)}`,
      );
    const runs = byTarget[index];
    const cpuMicros = runs.map((run) => run.serverCpuMicros).filter((micros) => micros !== undefined);
    figures.push({
      label: target.label,
      share,
      low: Math.min(...rates),
      high: Math.max(...rates),
      okPerSecond: median(runs.map((run) => run.okPerSecond)),
      p99: median(runs.map((run) => run.p99)),
      cpuMicros: cpuMicros.length === runs.length ? median(cpuMicros) : undefined,
    });
  }
  return figures;
}

/** " (median of 3 rounds: 28.0-33.5%)", nothing for one round. */
function range(shares: number[]): string {
  if (shares.length === 1) return '';
  return ` (median of ${shares.length} rounds: ${fixed(Math.min(...shares) * 100)}-${fixed(Math.max(...shares) * 100)}%)`;
}

function mean(values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The figures of a target measured in rounds (reads), as a record's figures. */
export function roundFigures(figures: RoundFigures): Pick<Measured, 'figures' | 'koaRatio'> {
  return {
    koaRatio: figures.share,
    figures: [
      { name: 'req/s (median)', value: Math.round(figures.okPerSecond), unit: '' },
      { name: 'p99', value: figures.p99, unit: 'ms' },
      ...(figures.cpuMicros === undefined
        ? []
        : [{ name: 'CPU per answer', value: Math.round(figures.cpuMicros), unit: 'µs' }]),
      { name: 'lowest round', value: round4(figures.low), unit: '%' },
      { name: 'highest round', value: round4(figures.high), unit: '%' },
    ],
  };
}

// The figures a run records (`npm run bench -- <name> --record`): each benchmark calls `record` for
// each scenario it measured, with what the run adds itself (date, machine, the load average at the
// scenario's start, marked by `heading`, and at the record, the command, the commit); run.ts saves them
// into docs/benchmarks/results.json when the benchmark ends without error (scripts/lib/bench-results.ts).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { type BenchmarkName, type BenchRecord, recordSchema, saveResults } from '../../lib/bench-results.ts';
import { ROOT } from '../../lib/service-process.ts';

const pending: BenchRecord[] = [];
let loadAtStart = os.loadavg()[0];

/** Notes the load average as a scenario starts (called by `heading`). */
export function markScenarioStart(): void {
  loadAtStart = os.loadavg()[0];
}

/** Environment variables that change what a benchmark measures, repeated in the recorded command. */
const COMMAND_ENV = ['BENCH_WEBHOOK_SUBSCRIPTIONS', 'BENCH_WEBHOOK_RATE'];

/** `npm run bench -- reads --db sqlite ...` as this process was asked to run (without `--record`). */
function commandLine(): string {
  const script = process.argv[1]?.replace(`${ROOT}/`, '') ?? '';
  const args = process.argv.slice(2).filter((arg) => arg !== '--record');
  const env = COMMAND_ENV.filter((name) => process.env[name]).map((name) => `${name}=${process.env[name]}`);
  const base = script === 'scripts/bench/run.ts' ? 'npm run bench --' : `node ${script}`;
  return [...env, base, ...args].join(' ');
}

/** The commit measured, `+changes` when tracked files (but the results file) differ from it; undefined without git. */
function commit(): string | undefined {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git('rev-parse', '--short=12', 'HEAD');
    // The results file itself changes with every recorded run: it does not make the code measured differ.
    const changed = git(
      'status',
      '--porcelain',
      '--untracked-files=no',
      '--',
      '.',
      ':!docs/benchmarks/results.json',
    );
    return changed === '' ? head : `${head}+changes`;
  } catch {
    return undefined;
  }
}

export interface Measured {
  benchmark: BenchmarkName;
  scenario: string;
  figures: BenchRecord['figures'];
  koaRatio?: number;
  targets?: BenchRecord['targets'];
}

/** Keeps one scenario's figures for `saveRecorded` (validated now: a bad figure fails the run). */
export function record(measured: Measured): void {
  const cpus = os.cpus();
  pending.push(
    recordSchema.parse({
      ...measured,
      targets: measured.targets ?? [],
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      machine: {
        cpu: cpus[0]?.model.trim() ?? 'unknown',
        cores: cpus.length,
        memoryGb: Math.round(os.totalmem() / 2 ** 30),
        os: `${os.type()} ${os.release()}`,
        node: process.version,
      },
      load: { start: round2(loadAtStart), end: round2(os.loadavg()[0]) },
      command: commandLine(),
      commit: commit(),
    }),
  );
}

const round2 = (value: number) => Math.round(value * 100) / 100;

export const round4 = (value: number) => Math.round(value * 10_000) / 10_000;
export const round1 = (value: number) => Math.round(value * 10) / 10;

/** Writes the kept records into the results file; returns how many. */
export async function saveRecorded(): Promise<number> {
  const records = pending.splice(0);
  if (records.length > 0) await saveResults(records);
  return records.length;
}

/** Drops what a failed benchmark kept. */
export function discardRecorded(): void {
  pending.length = 0;
}

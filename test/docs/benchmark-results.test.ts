// The benchmark figures docs/benchmarks.md shows come from docs/benchmarks/results.json, which the
// benchmarks write (`npm run bench -- <name> --record`): the file matches its schema, each record
// names a command that exists (an npm script and a benchmark it dispatches, or a script under
// scripts/bench/), and the page's table is the one the file renders (`npm run gen`).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BENCHMARK_NAMES,
  benchmarksPagePath,
  resultsPath,
  resultsSchema,
  withResultsTable,
} from '../../scripts/lib/bench-results.ts';

const root = path.resolve(import.meta.dirname, '../..');
const npmScripts: Record<string, string> = JSON.parse(
  readFileSync(path.join(root, 'package.json'), 'utf8'),
).scripts;
const results = resultsSchema.parse(JSON.parse(readFileSync(resultsPath, 'utf8')));

/** The problem with a recorded command, or null when it names a command that exists. */
function commandProblem(command: string, benchmark: string): string | null {
  // Environment assignments first (`BENCH_WEBHOOK_RATE=200 npm run bench -- webhooks ...`).
  const words = command.split(/\s+/).filter((word) => !/^[A-Z_]+=\S*$/.test(word));
  if (words[0] === 'npm' && words[1] === 'run') {
    const script = npmScripts[words[2]];
    if (script === undefined) return `npm script "${words[2]}" is not in package.json`;
    const file = /^node (\S+\.ts)$/.exec(script)?.[1];
    if (!file || !existsSync(path.join(root, file))) return `npm script "${words[2]}" runs no script file`;
    if (words[3] !== '--' || words[4] !== benchmark) return `does not run the benchmark "${benchmark}"`;
    return null;
  }
  if (words[0] === 'node' && /^scripts\/bench\/[\w-]+\.ts$/.test(words[1] ?? '')) {
    return existsSync(path.join(root, words[1])) ? null : `${words[1]} does not exist`;
  }
  return 'neither an npm script nor a script under scripts/bench/';
}

describe('benchmark results', () => {
  it('records each benchmark and scenario once, with dates and loads a run could give', () => {
    const keys = results.records.map((record) => `${record.benchmark}: ${record.scenario}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const record of results.records) {
      expect(Date.parse(record.date)).toBeLessThanOrEqual(Date.now());
      for (const target of record.targets) {
        const named =
          target.figure === 'koaRatio'
            ? record.koaRatio !== undefined
            : record.figures.some((figure) => figure.name === target.figure);
        expect(named, `${record.scenario}: the target's figure "${target.figure}"`).toBe(true);
      }
    }
  });

  it('names a command that exists for every record', () => {
    const problems = results.records
      .map((record) => [record.command, commandProblem(record.command, record.benchmark)])
      .filter(([, problem]) => problem !== null);
    expect(problems).toEqual([]);
  });

  it('knows every benchmark the dispatcher runs, and chain', () => {
    const dispatched = readFileSync(path.join(root, 'scripts/bench/run.ts'), 'utf8');
    for (const name of BENCHMARK_NAMES.filter((benchmark) => benchmark !== 'chain'))
      expect(
        existsSync(path.join(root, `scripts/bench/${name}.ts`)) && dispatched.includes(`'./${name}.ts'`),
      ).toBe(true);
    expect(existsSync(path.join(root, 'scripts/bench/chain.ts'))).toBe(true);
  });

  it("is what docs/benchmarks.md shows between the table's markers (npm run gen)", () => {
    const page = readFileSync(benchmarksPagePath, 'utf8');
    expect(withResultsTable(page, results.records)).toBe(page);
  });

  it('fails the page when a figure changes without npm run gen', () => {
    const page = readFileSync(benchmarksPagePath, 'utf8');
    const [first, ...rest] = results.records;
    if (!first) return;
    const changed = { ...first, figures: [{ ...first.figures[0], value: first.figures[0].value + 1 }] };
    expect(withResultsTable(page, [changed, ...rest])).not.toBe(page);
  });
});

/**
 * Writes test/durations.json (the seconds each test file took; test/sequencer.ts runs the longest
 * first) from a vitest JSON report of a whole run on the CI machine:
 *   npx vitest run --reporter=default --reporter=json --outputFile=/tmp/vitest.json
 *   node scripts/test-durations.ts /tmp/vitest.json
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from './gen/paths.ts';

interface Report {
  testResults: { name: string; startTime: number; endTime: number }[];
}

const [reportPath] = process.argv.slice(2);
if (!reportPath) throw new Error('usage: node scripts/test-durations.ts <vitest JSON report>');
const report = JSON.parse(readFileSync(reportPath, 'utf8')) as Report;
const durations = Object.fromEntries(
  report.testResults
    .map(
      (file) =>
        [relative(repoRoot, file.name), Math.round((file.endTime - file.startTime) / 100) / 10] as const,
    )
    .sort(([a], [b]) => a.localeCompare(b)),
);
writeFileSync(join(repoRoot, 'test', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(durations).length} files`);

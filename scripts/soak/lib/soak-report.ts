// The soak's summary as plain text.

import { table } from '../../bench/lib/report.ts';
import { megabytes as mb } from '../../lib/proc.ts';
import type { SoakReport } from './soak-run.ts';

export function printSoakReport(report: SoakReport): void {
  const { options, thirds } = report;
  console.log(
    `\n=== soak: ${options.db}, ${options.durationSeconds} s, ${options.rate} req/s offered, ${options.clients} WebSocket clients ===`,
  );
  console.log(
    `requests: ${report.requests}, 5xx: ${report.serverErrors}, other unexpected errors: ${report.unexpectedCount - report.serverErrors}; ` +
      `WebSocket deliveries: ${report.deliveries}, unexpected closes: ${JSON.stringify(report.unexpectedCloses)}`,
  );
  console.log(`answers: ${JSON.stringify(report.statuses)}`);
  for (const example of report.unexpected.slice(0, 5)) console.log(`  unexpected: ${example}`);
  console.log(
    `RSS: ${mb(report.rssBefore)} before the WebSocket clients, ${mb(report.rssStart)} at the start of the load, ` +
      `${mb(report.rssEnd)} at the end (${signed((report.rssEnd - report.rssStart) / 1024 / 1024)} MB)`,
  );
  table(
    ['third', 'req/s', 'p50 ms', 'p99 ms'],
    thirds.map((third, index) => [
      ['first', 'second', 'last'][index],
      third.throughput.toFixed(1),
      third.p50.toFixed(1),
      third.p99.toFixed(1),
    ]),
  );
  const [first, , last] = thirds;
  if (first && last) {
    console.log(
      `last third vs first: throughput ${signed(((last.throughput - first.throughput) / first.throughput) * 100)}%, ` +
        `p99 ${signed(((last.p99 - first.p99) / first.p99) * 100)}%`,
    );
  }
  if (report.failures.length === 0)
    console.log('verdict: PASS (no 5xx, no unexpected error, throughput held)');
  else for (const failure of report.failures) console.log(`FAIL: ${failure}`);
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(1)}`;
}

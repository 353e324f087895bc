// Soak: npm run soak -- [--minutes 10] [--db sqlite|postgres] [--clients 1000] [--rate 40] [--interval 30]
// One service instance under a steady mix of reads (wallets, assets, prices, transfers, owners),
// transfers and price posts, with N WebSocket clients subscribed to every event. Prints throughput,
// p99 and the service's RSS every interval; at the end, start and end RSS and the first third against
// the last. Exits 1 on a 5xx, an error other than an intended 4xx/429, or a throughput drop of more
// than half. Docs: docs/testing.md.
import { parseArgs } from 'node:util';
import { cleanupAll, installCleanupHandlers } from '../lib/cleanup.ts';
import type { DbKind } from '../lib/database.ts';
import { printSoakReport } from './lib/soak-report.ts';
import { runSoak } from './lib/soak-run.ts';

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run soak -- [--minutes n] [--db sqlite|postgres] [--clients n] [--rate req/s] [--interval seconds]\n`,
  );
  process.exit(64);
}

function number(raw: string, name: string, min: number, max: number): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max)
    usage(`--${name} must be a number from ${min} to ${max}`);
  return value;
}

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    db: { type: 'string', default: 'sqlite' },
    clients: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '40' },
    interval: { type: 'string', default: '30' },
  },
});
if (values.db !== 'sqlite' && values.db !== 'postgres') usage('--db must be sqlite or postgres');

installCleanupHandlers();
let failed = true;
try {
  const report = await runSoak({
    db: values.db as DbKind,
    // Access tokens live an hour (scripts/lib/service.ts): longer runs would see 401s.
    durationSeconds: Math.round(number(values.minutes, 'minutes', 0.25, 55) * 60),
    intervalSeconds: number(values.interval, 'interval', 1, 600),
    clients: Math.round(number(values.clients, 'clients', 0, 50_000)),
    rate: number(values.rate, 'rate', 1, 10_000),
    players: 20,
    log: (line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`),
  });
  printSoakReport(report);
  failed = report.failures.length > 0;
} catch (error) {
  process.stderr.write(
    `soak failed to run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
} finally {
  await cleanupAll();
}
process.exit(failed ? 1 : 0);

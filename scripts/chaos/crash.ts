// Crash test: npm run chaos -- [--db postgres|sqlite|both] [--kills 5] [--duration 60] [--clients 32]
//   [--players 12] [--redis redis://127.0.0.1:6379]
// Outages: npm run chaos -- --scenario database-outage|redis-outage|outages [--outages 3]
//   [--outage-seconds 5] [--clients 8]: PostgreSQL or Redis (or both, alternately) made unreachable
//   through a fault proxy under load; see lib/outage-run.ts.
// Drives transfers, mints and price posts with Idempotency-Keys from concurrent clients while
// WebSocket subscribers follow the events, kills the service with SIGKILL at random moments and
// restarts it on the same database, retries every unanswered request with the same key and body,
// then checks that nothing was lost, doubled or broken. Exits 1 on any failure. Docs: docs/testing.md.
import { parseArgs } from 'node:util';
import { cleanupAll, installCleanupHandlers } from '../lib/cleanup.ts';
import type { DbKind } from '../lib/database.ts';
import { printCrashReport } from './lib/crash-report.ts';
import { runCrashTest } from './lib/crash-run.ts';
import { type OutageKind, printOutageReport, runOutageTest } from './lib/outage-run.ts';

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run chaos -- [--db postgres|sqlite|both] [--kills n] [--duration seconds] ` +
      '[--clients n] [--players n] [--redis url]\n',
  );
  process.exit(64);
}

function integer(raw: string, name: string, min: number, max: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    usage(`--${name} must be an integer from ${min} to ${max}`);
  return value;
}

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'postgres' },
    kills: { type: 'string', default: '5' },
    duration: { type: 'string', default: '60' },
    clients: { type: 'string', default: '32' },
    players: { type: 'string', default: '12' },
    redis: { type: 'string' },
    scenario: { type: 'string', default: 'crash' },
    outages: { type: 'string', default: '3' },
    'outage-seconds': { type: 'string', default: '5' },
  },
});
const scenarios: Record<string, OutageKind[] | null> = {
  crash: null,
  'database-outage': ['database'],
  'redis-outage': ['redis'],
  outages: ['database', 'redis'],
};
if (!(values.scenario in scenarios))
  usage('--scenario must be crash, database-outage, redis-outage or outages');
const outageKinds = scenarios[values.scenario];
if (outageKinds) {
  installCleanupHandlers();
  let failed = false;
  try {
    const count = integer(values.outages, 'outages', 1, 100);
    const report = await runOutageTest({
      outages: Array.from({ length: count }, (_, index) => outageKinds[index % outageKinds.length]),
      outageMs: integer(values['outage-seconds'], 'outage-seconds', 1, 600) * 1000,
      clients: integer(values.clients, 'clients', 1, 1000),
      redisUrl: values.redis,
      log: (line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`),
    });
    printOutageReport(report);
    failed = report.failures.length > 0;
  } catch (error) {
    process.stderr.write(
      `outage test failed to run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    failed = true;
  } finally {
    await cleanupAll();
  }
  process.exit(failed ? 1 : 0);
}
const dbs: Record<string, DbKind[]> = {
  postgres: ['postgres'],
  sqlite: ['sqlite'],
  both: ['postgres', 'sqlite'],
};
if (!(values.db in dbs)) usage('--db must be postgres, sqlite or both');
const kills = integer(values.kills, 'kills', 1, 100);
const durationSeconds = integer(values.duration, 'duration', 5, 3600);
if (durationSeconds < kills * 3) usage('--duration must leave at least 3 s per kill');

installCleanupHandlers();
let failed = false;
try {
  for (const db of dbs[values.db]) {
    const report = await runCrashTest({
      db,
      kills,
      durationSeconds,
      clients: integer(values.clients, 'clients', 1, 1000),
      players: integer(values.players, 'players', 4, 1000),
      redisUrl: values.redis,
      log: (line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`),
    });
    printCrashReport(report);
    failed ||= report.failures.length > 0;
  }
} catch (error) {
  process.stderr.write(
    `crash test failed to run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  failed = true;
} finally {
  await cleanupAll();
}
process.exit(failed ? 1 : 0);

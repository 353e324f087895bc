// Benchmark dispatcher: npm run bench -- reads|edge|transfers|economy|auth|fanout|memory|replay-flood|verify-flood|webhooks|scale|expiry|market|all
//   [--db sqlite|postgres|both] [--duration 10] [--connections 10]
//   [--fanout 1000@200,10000@20] [--idle-clients 10000] [--ws-client lean|ws] [--reads hot|spread|both|replicas]
//   [--rounds 3] [--stages 1000,20000,200000] [--loads text[|text...]] [--bulk-events 0] [--vacuum] [--pg-shared-buffers 2GB] [--pg-statements] [--outbox-partition-ids n] [--asset-views n] [--record]
// Each benchmark starts what it measures (the service on a fresh database, the Koa hello baseline) as
// child processes on loopback, measures both with the same load, prints the figures, and stops them.
// With --record, each benchmark that ends without error replaces its scenarios' records in
// docs/benchmarks/results.json (then `npm run gen` renders them into docs/benchmarks.md).
import { parseArgs } from 'node:util';
import type { BenchmarkName } from '../lib/bench-results.ts';
import { cleanupAll, installCleanupHandlers } from '../lib/cleanup.ts';
import type { DbKind } from '../lib/database.ts';
import { auth } from './auth.ts';
import { economy } from './economy.ts';
import { edge } from './edge.ts';
import { expiry } from './expiry.ts';
import { fanout } from './fanout.ts';
import type { BenchOptions } from './lib/options.ts';
import { discardRecorded, saveRecorded } from './lib/record.ts';
import { market } from './market.ts';
import { memory } from './memory.ts';
import { reads } from './reads.ts';
import { replayFlood } from './replay-flood.ts';
import { scale } from './scale.ts';
import { transfers } from './transfers.ts';
import { verifyFlood } from './verify-flood.ts';
import { webhooks } from './webhooks.ts';

const BENCHMARKS: Record<Exclude<BenchmarkName, 'chain'>, (options: BenchOptions) => Promise<void>> = {
  reads,
  edge,
  transfers,
  economy,
  auth,
  fanout,
  memory,
  'replay-flood': replayFlood,
  'verify-flood': verifyFlood,
  webhooks,
  scale,
  expiry,
  market,
};

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run bench -- ${Object.keys(BENCHMARKS).join('|')}|all [--db sqlite|postgres|both] ` +
      '[--duration seconds] [--connections n] [--fanout clients@rate,...] [--idle-clients n] ' +
      '[--ws-client lean|ws] [--reads hot|spread|both|replicas] [--rounds n] [--stages wallets,wallets,...] [--loads text[|text...]] ' +
      '[--bulk-events n] [--vacuum] [--pg-shared-buffers size] [--pg-statements] [--outbox-partition-ids n] [--asset-views n] [--record]\n',
  );
  process.exit(64);
}

function positiveInteger(raw: string, name: string, max: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max)
    usage(`--${name} must be an integer from 1 to ${max}`);
  return value;
}

function parseOptions(): { names: (keyof typeof BENCHMARKS)[]; options: BenchOptions; record: boolean } {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      db: { type: 'string', default: 'sqlite' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '10' },
      fanout: { type: 'string', default: '1000@200,10000@20' },
      'idle-clients': { type: 'string', default: '10000' },
      'ws-client': { type: 'string', default: 'lean' },
      reads: { type: 'string', default: 'both' },
      rounds: { type: 'string', default: '3' },
      stages: { type: 'string', default: '1000,20000,200000' },
      loads: { type: 'string' },
      'bulk-events': { type: 'string', default: '0' },
      vacuum: { type: 'boolean', default: false },
      'pg-shared-buffers': { type: 'string' },
      'pg-statements': { type: 'boolean', default: false },
      'outbox-partition-ids': { type: 'string' },
      'asset-views': { type: 'string' },
      record: { type: 'boolean', default: false },
    },
  });
  if (positionals.length !== 1) usage('name one benchmark');
  const [name] = positionals;
  const known = (candidate: string): candidate is keyof typeof BENCHMARKS => candidate in BENCHMARKS;
  if (name !== 'all' && !known(name)) usage(`unknown benchmark "${name}"`);
  const dbs: Record<string, DbKind[]> = {
    sqlite: ['sqlite'],
    postgres: ['postgres'],
    both: ['sqlite', 'postgres'],
  };
  if (!(values.db in dbs)) usage('--db must be sqlite, postgres or both');
  const wsClient = values['ws-client'];
  if (wsClient !== 'lean' && wsClient !== 'ws') usage('--ws-client must be lean or ws');
  const readsMode = values.reads;
  if (readsMode !== 'hot' && readsMode !== 'spread' && readsMode !== 'both' && readsMode !== 'replicas')
    usage('--reads must be hot, spread, both or replicas');
  const fanoutCases = values.fanout.split(',').map((spec) => {
    const match = /^(\d+)@(\d+)$/.exec(spec.trim());
    if (!match) usage(`--fanout cases look like 1000@200 (clients@events per second), not "${spec}"`);
    return {
      clients: positiveInteger(match[1], 'fanout', 50_000),
      rate: positiveInteger(match[2], 'fanout', 10_000),
    };
  });
  const stages = values.stages.split(',').map((stage) => positiveInteger(stage.trim(), 'stages', 10_000_000));
  if (stages.some((stage, index) => index > 0 && stage <= stages[index - 1]))
    usage('--stages are wallet totals, each larger than the one before');
  if (values.loads !== undefined && values.record) usage('--loads measures part of each stage: not recorded');
  if (values['pg-statements'] && values.record)
    usage('--pg-statements slows every statement to count it: not recorded');
  if (values['pg-statements'] && values.db === 'sqlite') usage('--pg-statements is for PostgreSQL');
  const sharedBuffers = values['pg-shared-buffers'];
  if (sharedBuffers !== undefined && !/^[1-9]\d{0,5}(kB|MB|GB)$/.test(sharedBuffers))
    usage('--pg-shared-buffers is a PostgreSQL size such as 512MB or 2GB');
  return {
    names: known(name) ? [name] : (Object.keys(BENCHMARKS) as (keyof typeof BENCHMARKS)[]),
    record: values.record,
    options: {
      dbs: dbs[values.db],
      durationSeconds: positiveInteger(values.duration, 'duration', 600),
      connections: positiveInteger(values.connections, 'connections', 1000),
      fanout: fanoutCases,
      idleClients: positiveInteger(values['idle-clients'], 'idle-clients', 50_000),
      wsClient,
      reads: readsMode,
      rounds: positiveInteger(values.rounds, 'rounds', 20),
      stages,
      loads: values.loads,
      bulkEvents:
        values['bulk-events'] === '0'
          ? 0
          : positiveInteger(values['bulk-events'], 'bulk-events', 100_000_000),
      vacuum: values.vacuum,
      pgSharedBuffers: sharedBuffers,
      pgStatements: values['pg-statements'],
      outboxPartitionIds:
        values['outbox-partition-ids'] === undefined
          ? undefined
          : positiveInteger(values['outbox-partition-ids'], 'outbox-partition-ids', 1_000_000_000),
      assetViews:
        values['asset-views'] === undefined
          ? undefined
          : positiveInteger(values['asset-views'], 'asset-views', 10_000_000),
    },
  };
}

installCleanupHandlers();
const { names, options, record } = parseOptions();
try {
  for (const name of names) {
    try {
      await BENCHMARKS[name](options);
    } catch (error) {
      discardRecorded();
      throw error;
    }
    if (record)
      console.log(`\n${name}: ${await saveRecorded()} records written to docs/benchmarks/results.json`);
  }
} catch (error) {
  process.stderr.write(
    `benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
} finally {
  await cleanupAll();
}

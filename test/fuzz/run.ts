// npm run fuzz -- [--requests 10000] [--db sqlite|postgres] [--seed N] [--concurrency 8]
// Boots the real app on a fresh database, builds a world of users and assets through the API, sends
// requests generated from the contract (valid and mutated) and prints what came back. Exits 1 on any
// 5xx, contract violation, failed readiness or broken ledger invariant.
import { parseArgs } from 'node:util';
import { startTestApp } from '../helpers/app.ts';
import { runCampaign } from './lib/campaign.ts';
import { formatReport, passed } from './lib/report.ts';
import { buildWorld } from './lib/world.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    db: { type: 'string', default: 'sqlite' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
  },
});
const db = values.db;
if (db !== 'sqlite' && db !== 'postgres') throw new Error('--db must be sqlite or postgres');
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);

// Rate limits would turn most of the run into 429s; they have their own tests. Unexpected errors
// are logged so a 5xx comes with its stack.
const t = await startTestApp(db, {
  RATE_LIMIT_REQUESTS: '1000000',
  RATE_LIMIT_USER_REQUESTS: '1000000',
  LOGIN_RATE_LIMIT_REQUESTS: '100000',
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
});
let ok = false;
try {
  const world = await buildWorld(t);
  process.stdout.write(`Fuzzing ${t.baseUrl} on ${db} with ${requests} requests, seed ${seed}\n`);
  const report = await runCampaign(t, world, {
    requests,
    seed,
    concurrency,
    onProgress: (sent) => {
      if (sent % 1000 === 0) process.stdout.write(`  ${sent} sent\n`);
    },
  });
  process.stdout.write(`${formatReport(report)}\n`);
  ok = passed(report);
} finally {
  await t.close();
}
process.exit(ok ? 0 : 1);

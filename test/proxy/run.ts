// npm run proxy -- [--db sqlite|postgres]
// Starts the service in-process on a fresh database with the demo data, puts `prism proxy --errors`
// (the bundled contract) in front of it and drives the representative flow through the proxy.
// Prints requests sent and every contract violation; exits 1 on any violation or unexpected answer.
import { parseArgs } from 'node:util';
import { startTestApp } from '../helpers/app.ts';
import { ProxyClient } from './lib/client.ts';
import { runFlow } from './lib/flow.ts';
import { startPrismProxy } from './lib/prism.ts';

const { values } = parseArgs({ options: { db: { type: 'string', default: 'sqlite' } } });
const db = values.db;
if (db !== 'sqlite' && db !== 'postgres') throw new Error('--db must be sqlite or postgres');

const started = performance.now();
const t = await startTestApp(db, { SEED_DEMO: 'always', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error' });
let ok = false;
try {
  const prism = await startPrismProxy(t.baseUrl);
  try {
    const client = new ProxyClient(prism.baseUrl);
    await runFlow(client);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    process.stdout.write(
      [
        `Contract proxy (prism proxy --errors) in front of the service on ${db}, ${seconds} s`,
        `Requests sent through the proxy: ${client.sent}`,
        `Contract violations: ${client.violations.length}`,
        ...client.violations.map((line) => `  ${line}`),
        `Unexpected answers: ${client.failures.length}`,
        ...client.failures.map((line) => `  ${line}`),
        '',
      ].join('\n'),
    );
    ok = client.violations.length === 0 && client.failures.length === 0;
  } finally {
    await prism.close();
  }
} finally {
  await t.close();
}
process.exit(ok ? 0 : 1);

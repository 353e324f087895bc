// Memory: resident memory (VmRSS) of one service instance holding N idle WebSocket connections
// authenticated with bearer + API key headers (default 10,000), read from /proc before the clients
// connect, once they are all open, and once each has one subscription; the Koa hello baseline (a
// bare `ws` server) holds the same clients. Target (issue 5): under 500 MB at 10,000 connections.

import { createUser } from '../lib/api.ts';
import type { Child } from '../lib/children.ts';
import { megabytes, rssBytes } from '../lib/proc.ts';
import { startService } from '../lib/service.ts';
import type { WsClientKind } from '../lib/ws-clients.ts';
import { openClients } from '../lib/ws-clients.ts';
import { startHello } from './lib/hello.ts';
import type { BenchOptions } from './lib/options.ts';
import { record, round1 } from './lib/record.ts';
import { fixed, heading, table } from './lib/report.ts';

const SETTLE_MS = 3000;
const TARGET_BYTES = 500 * 1024 * 1024;

interface Readings {
  before: number;
  connected: number;
  subscribed: number;
  connectSeconds: number;
}

export async function memory(options: BenchOptions): Promise<void> {
  const clients = options.idleClients;
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const listener = await createUser(service);
      heading(`memory on ${kind}: ${clients} idle WebSocket connections`, {
        'settle time': `${SETTLE_MS} ms`,
        'WebSocket client': options.wsClient,
      });
      const helloReadings = await hold(hello, clients, {}, options.wsClient);
      const serviceReadings = await hold(service, clients, listener.headers, options.wsClient);
      const perConnection = (readings: Readings, at: number) =>
        `${fixed((at - readings.before) / clients / 1024, 1)} KB`;
      table(
        ['', 'Koa hello (ws)', `service (${kind})`],
        [
          ['RSS before', ...[helloReadings, serviceReadings].map((r) => megabytes(r.before))],
          [
            `RSS with ${clients} open`,
            ...[helloReadings, serviceReadings].map((r) => megabytes(r.connected)),
          ],
          ['  per connection', ...[helloReadings, serviceReadings].map((r) => perConnection(r, r.connected))],
          [
            `RSS with ${clients} subscribed`,
            ...[helloReadings, serviceReadings].map((r) => megabytes(r.subscribed)),
          ],
          [
            '  per connection',
            ...[helloReadings, serviceReadings].map((r) => perConnection(r, r.subscribed)),
          ],
          [
            'time to open all (s)',
            ...[helloReadings, serviceReadings].map((r) => fixed(r.connectSeconds, 1)),
          ],
        ],
      );
      const peak = Math.max(serviceReadings.connected, serviceReadings.subscribed);
      const mb = (bytes: number) => round1(bytes / 1024 / 1024);
      record({
        benchmark: 'memory',
        scenario: `${clients.toLocaleString('en-US')} idle WebSocket connections, each subscribed once, ${kind}`,
        figures: [
          { name: 'service resident', value: mb(peak), unit: 'MB' },
          { name: 'before the connections', value: mb(serviceReadings.before), unit: 'MB' },
          {
            name: 'per connection',
            value: round1((peak - serviceReadings.before) / clients / 1024),
            unit: 'KB',
          },
          {
            name: 'Koa hello (bare ws) resident',
            value: mb(Math.max(helloReadings.connected, helloReadings.subscribed)),
            unit: 'MB',
          },
        ],
        targets: [{ figure: 'service resident', below: TARGET_BYTES / 1024 / 1024, source: 'issue 5' }],
      });
      console.log(
        `service RSS with ${clients} connections: ${megabytes(peak)} (target < 500 MB: ${peak < TARGET_BYTES ? 'met' : 'NOT met'})`,
      );
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

async function hold(
  target: Child,
  clients: number,
  headers: Record<string, string>,
  client: WsClientKind,
): Promise<Readings> {
  const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  await settle();
  const before = rssBytes(target.pid);
  const started = performance.now();
  const fleet = await openClients(`${target.baseUrl.replace(/^http/, 'ws')}/ws`, clients, headers, {
    client,
  });
  try {
    const connectSeconds = (performance.now() - started) / 1000;
    await settle();
    const connected = rssBytes(target.pid);
    await fleet.subscribeAll();
    await settle();
    const subscribed = rssBytes(target.pid);
    const closes = [...fleet.unexpectedCloses].map(([code, count]) => `${code}: ${count}`).join(', ');
    if (closes) console.log(`${target.name}: unexpected closes while idle: ${closes}`);
    return { before, connected, subscribed, connectSeconds };
  } finally {
    await fleet.closeAll();
  }
}

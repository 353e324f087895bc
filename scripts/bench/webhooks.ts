// Webhooks under load (issue 18): 100 subscriptions (every priceUpdate, loopback receivers in this
// process) while an oracle commits 200 price posts per second, and the cost to WebSocket fan-out.
// Three runs of the fan-out case of fanout.ts at the same rate with WS_CLIENTS clients: the Koa hello
// baseline, the service without webhooks, and the service with the subscriptions delivering.
// Reported: webhook deliveries (expected = events x subscriptions), commit-to-delivery latency
// (receipt minus the event's occurredAt; same host, same clock), and WebSocket commit-to-delivery
// p50/p99 without and with webhooks. Targets: webhook p99 < 200 ms; WebSocket p99 moves < 20%.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { helloTarget, runCase, serviceTarget } from './fanout.ts';
import { call } from './lib/api.ts';
import { startHello } from './lib/hello.ts';
import { Histogram } from './lib/histogram.ts';
import type { BenchOptions } from './lib/options.ts';
import { fixed, heading, table } from './lib/report.ts';
import { startService } from './lib/service.ts';

const SUBSCRIPTIONS = 100;
const RATE = 200;
const WS_CLIENTS = 100;
const DRAIN_MS = 10_000;
const TARGET_P99_MS = 200;
const TARGET_WS_SHIFT = 0.2;

export async function webhooks(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind, {
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      MAX_WEBHOOKS_PER_USER: String(SUBSCRIPTIONS),
      WEBHOOK_CONCURRENCY: String(SUBSCRIPTIONS),
    });
    let measuring = false;
    let received = 0;
    /** Events delivered at least once: every subscription wants each of them. */
    const events = new Set<string>();
    const latency = new Histogram();
    const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const at = performance.timeOrigin + performance.now();
        res.writeHead(204).end();
        if (!measuring) return;
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          id: string;
          occurredAt: string;
        };
        latency.record(at - Date.parse(event.occurredAt));
        events.add(event.id);
        received++;
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as { port: number };
    try {
      heading(
        `webhooks on ${kind}: ${SUBSCRIPTIONS} subscriptions, ${RATE} events/s, ${WS_CLIENTS} WebSocket clients`,
        {
          'seconds of events': options.durationSeconds,
        },
      );
      const target = await serviceTarget(service);
      const baseline = await runCase(helloTarget(hello), WS_CLIENTS, RATE, options);
      const without = await runCase(target, WS_CLIENTS, RATE, options);
      for (let i = 0; i < SUBSCRIPTIONS; i++) {
        await call(service.baseUrl, 'POST', '/api/v1/webhooks', {
          session: { headers: target.headers },
          body: { url: `http://127.0.0.1:${port}/hooks/${i}`, eventTypes: ['priceUpdate'] },
        });
      }
      measuring = true;
      const withHooks = await runCase(target, WS_CLIENTS, RATE, options);
      // The warm-up's events count too (they follow the subscriptions): each event seen, once per subscription.
      const expected = () => events.size * SUBSCRIPTIONS;
      const drainUntil = Date.now() + DRAIN_MS;
      while (received < expected() && Date.now() < drainUntil) await new Promise((r) => setTimeout(r, 50));
      measuring = false;
      const ms = (histogram: Histogram, fraction: number) => fixed(histogram.percentile(fraction), 1);
      table(
        ['', 'Koa hello (WS only)', 'service, no webhooks', 'service, with webhooks'],
        [
          [
            'WebSocket commit->delivery p50 / p99 ms',
            ...[baseline, without, withHooks].map(
              (r) => `${ms(r.commitToDelivery, 0.5)} / ${ms(r.commitToDelivery, 0.99)}`,
            ),
          ],
          [
            'WebSocket deliveries per second',
            ...[baseline, without, withHooks].map((r) => fixed(r.deliveredPerSecond, 0)),
          ],
          ['events committed', '', String(without.committed), String(withHooks.committed)],
          [
            'webhook deliveries / expected',
            '',
            '',
            `${received} / ${expected()} (${fixed((100 * received) / Math.max(1, expected()))}%)`,
          ],
          ['webhook commit->delivery p50 / p99 ms', '', '', `${ms(latency, 0.5)} / ${ms(latency, 0.99)}`],
          [
            'target process CPU (% of a core)',
            '',
            fixed(without.targetCpuPercent, 0),
            fixed(withHooks.targetCpuPercent, 0),
          ],
        ],
      );
      const p99 = latency.percentile(0.99);
      const shift =
        withHooks.commitToDelivery.percentile(0.99) /
          Math.max(0.001, without.commitToDelivery.percentile(0.99)) -
        1;
      console.log(
        `webhook commit->delivery p99 ${fixed(p99, 1)} ms (target < ${TARGET_P99_MS} ms: ${p99 < TARGET_P99_MS && received >= expected() ? 'met' : 'NOT met'}); ` +
          `WebSocket p99 moved ${fixed(100 * shift)}% (target < ${100 * TARGET_WS_SHIFT}%: ${shift < TARGET_WS_SHIFT ? 'met' : 'NOT met'}); ` +
          `service WebSocket deliveries/s with webhooks: ${fixed((100 * withHooks.deliveredPerSecond) / Math.max(1, baseline.deliveredPerSecond))}% of Koa hello's`,
      );
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await service.stop();
      await hello.stop();
    }
  }
}

// Webhooks under load (issue 18): 100 subscriptions (every priceUpdate, loopback receivers in a
// worker thread) while an oracle commits 200 price posts per second, and the cost to WebSocket
// fan-out.
// Three runs of the fan-out case of fanout.ts at the same rate with WS_CLIENTS clients: the Koa hello
// baseline, the service without webhooks, and the service with the subscriptions delivering.
// Reported: webhook deliveries (expected = events x subscriptions), commit-to-delivery latency
// (receipt minus the event's occurredAt; same host, same clock), and WebSocket commit-to-delivery
// p50/p99 without and with webhooks. Targets: webhook p99 < 200 ms; WebSocket p99 moves < 20%.
// The receivers are one HTTP server in a worker thread (lib/webhook-receiver-worker.ts), off the
// event loop that receives the WebSocket frames.
import { Worker } from 'node:worker_threads';
import { helloTarget, runCase, serviceTarget } from './fanout.ts';
import { call } from './lib/api.ts';
import { startHello } from './lib/hello.ts';
import { Histogram } from './lib/histogram.ts';
import type { BenchOptions } from './lib/options.ts';
import { fixed, heading, table } from './lib/report.ts';
import { startService } from './lib/service.ts';
import type { ReceiverCommand, ReceiverMessage } from './lib/webhook-receiver-worker.ts';

/** The load (BENCH_WEBHOOK_SUBSCRIPTIONS, BENCH_WEBHOOK_RATE: to find what a machine sustains). */
const SUBSCRIPTIONS = envInteger('BENCH_WEBHOOK_SUBSCRIPTIONS', 100);
const RATE = envInteger('BENCH_WEBHOOK_RATE', 200);
const WS_CLIENTS = 100;
const DRAIN_MS = 10_000;
const TARGET_P99_MS = 200;
const TARGET_WS_SHIFT = 0.2;

function envInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 10_000)
    throw new Error(`${name} must be an integer from 1 to 10000`);
  return value;
}

export async function webhooks(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind, {
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      MAX_WEBHOOKS_PER_USER: String(SUBSCRIPTIONS),
      WEBHOOK_CONCURRENCY: String(SUBSCRIPTIONS),
    });
    const receiver = new Worker(new URL('./lib/webhook-receiver-worker.ts', import.meta.url));
    let progress = { received: 0, events: 0 };
    let report: ((value: { received: number; events: number; latencies: Float64Array }) => void) | null =
      null;
    const port = await new Promise<number>((resolve, reject) => {
      receiver.once('error', reject);
      receiver.on('message', (message: ReceiverMessage) => {
        if ('port' in message) resolve(message.port);
        else if ('progress' in message) progress = message.progress;
        else report?.(message.report);
      });
    });
    const command = (message: ReceiverCommand) => receiver.postMessage(message);
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
      command({ measuring: true });
      const withHooks = await runCase(target, WS_CLIENTS, RATE, options);
      // The warm-up's events count too (they follow the subscriptions): each event seen, once per subscription.
      const drainUntil = Date.now() + DRAIN_MS;
      while (progress.received < progress.events * SUBSCRIPTIONS && Date.now() < drainUntil)
        await new Promise((r) => setTimeout(r, 50));
      command({ measuring: false });
      const final = await new Promise<{ received: number; events: number; latencies: Float64Array }>(
        (resolve) => {
          report = resolve;
          command({ report: true });
        },
      );
      const { received } = final;
      const expected = () => final.events * SUBSCRIPTIONS;
      const latency = new Histogram();
      for (const sample of final.latencies) latency.record(sample);
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
          ['events committed (measured part)', '', String(without.committed), String(withHooks.committed)],
          ['events received by webhook (warm-up included)', '', '', String(final.events)],
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
      await receiver.terminate();
      await service.stop();
      await hello.stop();
    }
  }
}

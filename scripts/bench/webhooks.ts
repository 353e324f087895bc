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
import { call } from '../lib/api.ts';
import { Histogram } from '../lib/histogram.ts';
import { threadCpuSeconds } from '../lib/proc.ts';
import { startService } from '../lib/service.ts';
import { helloTarget, runCase, serviceTarget } from './fanout.ts';
import { startHello } from './lib/hello.ts';
import { runLoad } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record, round1, round4 } from './lib/record.ts';
import { fixed, heading, table } from './lib/report.ts';
import { CEILING_BODY, senderCeiling } from './lib/webhook-ceiling.ts';
import type { ReceiverCommand, ReceiverMessage } from './lib/webhook-receiver-worker.ts';
import { runQueueSeconds } from './lib/webhook-sched.ts';

type ReceiverReport = Extract<ReceiverMessage, { report: unknown }>['report'];

/** The load (BENCH_WEBHOOK_SUBSCRIPTIONS, BENCH_WEBHOOK_RATE: to find what a machine sustains). */
const SUBSCRIPTIONS = envInteger('BENCH_WEBHOOK_SUBSCRIPTIONS', 100);
const RATE = envInteger('BENCH_WEBHOOK_RATE', 200);
const WS_CLIENTS = 100;
const DRAIN_MS = 10_000;
const QUIET_MS = 300;
const TARGET_P99_MS = 200;
const TARGET_WS_SHIFT = 0.2;
const CEILING_MS = 2000;
const CEILING_LOOPS = 50;

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
      // One user owns every subscription here.
      WEBHOOK_CONCURRENCY_PER_OWNER: String(SUBSCRIPTIONS),
    });
    const receiver = new Worker(new URL('./lib/webhook-receiver-worker.ts', import.meta.url));
    let progress = { received: 0, events: 0 };
    let report: ((value: ReceiverReport) => void) | null = null;
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
      // The ceiling first, alone on the machine's share: the sender thread flat out to the same receiver
      // (and to Koa hello), and the receiver alone (unsigned POSTs by autocannon) beside Koa hello.
      const receiverUrl = `http://127.0.0.1:${port}/ceiling`;
      const helloUrl = `${hello.baseUrl}/ceiling`;
      const ceiling = await senderCeiling(receiverUrl, CEILING_MS, CEILING_LOOPS);
      const senderToHello = await senderCeiling(helloUrl, CEILING_MS, CEILING_LOOPS);
      const post = {
        connections: CEILING_LOOPS,
        durationSeconds: CEILING_MS / 1000,
        method: 'POST' as const,
      };
      const body = { headers: { 'content-type': 'application/json' }, body: CEILING_BODY };
      const receiverAlone = await runLoad({ label: 'receiver', url: receiverUrl, ...post, ...body });
      const helloAlone = await runLoad({
        label: 'Koa hello',
        url: helloUrl,
        ...post,
        ...body,
        serverPid: hello.pid,
      });
      const target = await serviceTarget(service);
      const baseline = await runCase(helloTarget(hello), WS_CLIENTS, RATE, options);
      const threadsBefore = threadCpuSeconds(service.pid);
      // The service's event-loop delay (prom-client's, reset by every scrape) during each run.
      await scrape(service.baseUrl);
      const waitsBefore = waits(service.pid);
      const startedWithout = performance.now();
      const without = await runCase(target, WS_CLIENTS, RATE, options);
      const waitsWithout = perSecond(
        since(waits(service.pid), waitsBefore),
        performance.now() - startedWithout,
      );
      const lagWithout = loopDelay(await scrape(service.baseUrl));
      const threadsWithout = since(threadCpuSeconds(service.pid), threadsBefore);
      const secrets: Record<string, string> = {};
      for (let i = 0; i < SUBSCRIPTIONS; i++) {
        const created = await call<{ secret: string }>(service.baseUrl, 'POST', '/api/v1/webhooks', {
          session: { headers: target.headers },
          body: { url: `http://127.0.0.1:${port}/hooks/${i}`, eventTypes: ['priceUpdate'] },
        });
        secrets[`/hooks/${i}`] = created.secret;
      }
      // The receiver verifies a sample of each subscription's requests (webhook-receiver-worker.ts).
      command({ secrets });
      command({ measuring: true });
      await scrape(service.baseUrl);
      const threadsBeforeHooks = threadCpuSeconds(service.pid);
      const waitsBeforeHooks = waits(service.pid);
      const startedWith = performance.now();
      const withHooks = await runCase(target, WS_CLIENTS, RATE, options);
      // The warm-up's events count too (they follow the subscriptions): each event seen, once per subscription.
      // Done when every event seen reached every subscription and nothing more came for QUIET_MS: a
      // progress report (every 50 ms) can be complete just before the last events' first deliveries.
      const drainUntil = Date.now() + DRAIN_MS;
      let quietSince = Date.now();
      let lastReceived = -1;
      while (Date.now() < drainUntil) {
        if (progress.received !== lastReceived) {
          lastReceived = progress.received;
          quietSince = Date.now();
        }
        if (progress.received >= progress.events * SUBSCRIPTIONS && Date.now() - quietSince >= QUIET_MS)
          break;
        await new Promise((r) => setTimeout(r, 50));
      }
      command({ measuring: false });
      const threadsWith = since(threadCpuSeconds(service.pid), threadsBeforeHooks);
      const waitsWith = perSecond(
        since(waits(service.pid), waitsBeforeHooks),
        performance.now() - startedWith,
      );
      const final = await new Promise<ReceiverReport>((resolve) => {
        report = resolve;
        command({ report: true });
      });
      const metricsText = await scrape(service.baseUrl);
      const lagWith = loopDelay(metricsText);
      const stages = stageTable(metricsText);
      const attempts = metricsText
        .split('\n')
        .filter((line) => line.startsWith('webhook_attempts_total{'))
        .map((line) => line.replace('webhook_attempts_total', ''))
        .join(', ');
      const { received } = final;
      const expected = () => final.events * SUBSCRIPTIONS;
      const latency = new Histogram();
      for (const sample of final.latencies) latency.record(sample);
      // The first second after the subscriptions (claims, the sender thread's start, first connections)
      // apart from the rest (steady state).
      const firstAt = final.receivedAt.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
      const lastAt = final.receivedAt.reduce((a, b) => Math.max(a, b), 0);
      const startup = new Histogram();
      const steady = new Histogram();
      for (const [i, sample] of final.latencies.entries())
        (final.receivedAt[i] - firstAt < 1000 ? startup : steady).record(sample);
      const sustained = (1000 * received) / Math.max(1, lastAt - firstAt);
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
            '  first second / after it: p99 ms (samples)',
            '',
            '',
            `${ms(startup, 0.99)} (${startup.count}) / ${ms(steady, 0.99)} (${steady.count})`,
          ],
          ["service event loop delay p50 / p99 / max ms (its main thread's turns)", '', lagWithout, lagWith],
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
        "\nwhere a webhook delivery's time goes (service /metrics, webhook_delivery_stage_seconds):",
      );
      table(['stage', 'count', 'p50 ms <=', 'p99 ms <=', 'max bucket ms <='], stages);
      console.log(`attempts by outcome: ${attempts || 'none'}`);
      // CPU per webhook delivery, by thread: the with-webhooks run (events, their fan-out and the
      // deliveries, drain included) minus the run without webhooks scaled to its events.
      const scale = withHooks.committed / Math.max(1, without.committed);
      const names = [...new Set([...threadsWith.keys(), ...threadsWithout.keys()])].sort(
        (a, b) => (threadsWith.get(b) ?? 0) - (threadsWith.get(a) ?? 0),
      );
      console.log(
        `\nthe receiver thread (bench process): ${fixed(final.cpuMicros / 1e6, 2)} CPU s while measuring, ` +
          `${fixed(final.cpuMicros / Math.max(1, received), 1)} µs per request received; signatures verified ` +
          `(a sample of each subscription's requests): ${final.verified}, failed: ${final.badSignatures}`,
      );
      console.log('service CPU by thread (s): without webhooks, with webhooks; extra per webhook delivery:');
      table(
        ['thread', 'CPU s without', 'CPU s with', 'extra µs per delivery'],
        [...names, 'all'].map((name) => {
          const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
          const w = name === 'all' ? sum(threadsWith) : (threadsWith.get(name) ?? 0);
          const o = name === 'all' ? sum(threadsWithout) : (threadsWithout.get(name) ?? 0);
          return [name, fixed(o, 2), fixed(w, 2), fixed((1e6 * (w - o * scale)) / Math.max(1, received), 1)];
        }),
      );
      console.log(
        'waiting for a CPU while runnable (Linux schedstat run_delay), ms per second of the run ' +
          '(from the run without webhooks to the end of the drain with them):',
      );
      table(
        ['thread', 'without webhooks', 'with webhooks'],
        [...new Set([...waitsWith.keys(), ...waitsWithout.keys()])]
          .filter((name) => (waitsWith.get(name) ?? 0) >= 1 || (waitsWithout.get(name) ?? 0) >= 1)
          .map((name) => [name, fixed(waitsWithout.get(name) ?? 0, 0), fixed(waitsWith.get(name) ?? 0, 0)]),
      );
      console.log(
        `ceiling (${CEILING_LOOPS} concurrent, ${CEILING_MS / 1000} s each, alone): signed by the sender thread -> ` +
          `receiver ${fixed(ceiling, 0)}/s, -> Koa hello ${fixed(senderToHello, 0)}/s; unsigned by autocannon -> ` +
          `receiver ${fixed(receiverAlone.okPerSecond, 0)}/s, -> Koa hello ${fixed(helloAlone.okPerSecond, 0)}/s`,
      );
      console.log(
        `sustained ${fixed(sustained, 0)} webhook deliveries/s (offered ${SUBSCRIPTIONS * RATE}/s) = ` +
          `${fixed((100 * sustained) / Math.max(1, ceiling))}% of this machine's ceiling, ${fixed(ceiling, 0)}/s ` +
          `(the sender thread alone, ${CEILING_LOOPS} loops, to the same receiver); the issue's 100 x 200 = 20000/s ` +
          `is ${fixed(20_000 / Math.max(1, ceiling), 1)}x that ceiling`,
      );
      console.log(
        `webhook commit->delivery p99 ${fixed(p99, 1)} ms (target < ${TARGET_P99_MS} ms: ${p99 < TARGET_P99_MS && received >= expected() ? 'met' : 'NOT met'}); ` +
          `WebSocket p99 moved ${fixed(100 * shift)}% (target < ${100 * TARGET_WS_SHIFT}%: ${shift < TARGET_WS_SHIFT ? 'met' : 'NOT met'}); ` +
          `service WebSocket deliveries/s with webhooks: ${fixed((100 * withHooks.deliveredPerSecond) / Math.max(1, baseline.deliveredPerSecond))}% of Koa hello's`,
      );
      record({
        benchmark: 'webhooks',
        scenario: `${SUBSCRIPTIONS} subscriptions × ${RATE} events/s beside ${WS_CLIENTS} WebSocket clients, ${kind}`,
        koaRatio: round4(withHooks.deliveredPerSecond / Math.max(1, baseline.deliveredPerSecond)),
        figures: [
          { name: 'webhook deliveries', value: Math.round(sustained), unit: '/s' },
          { name: 'delivered', value: round4(received / Math.max(1, expected())), unit: '%' },
          { name: 'commit→delivery p99', value: round1(p99), unit: 'ms' },
          { name: 'WebSocket p99 shift', value: round4(shift), unit: '%' },
        ],
        targets: [
          { figure: 'commit→delivery p99', below: TARGET_P99_MS, source: 'issue 18' },
          { figure: 'delivered', atLeast: 1, source: 'issue 18' },
          { figure: 'WebSocket p99 shift', below: TARGET_WS_SHIFT, source: 'issue 18' },
        ],
      });
    } finally {
      await receiver.terminate();
      await service.stop();
      await hello.stop();
    }
  }
}

/** Run-queue waits of the service's threads and of this process's (the WebSocket clients, `bench main`, and the receiver). */
function waits(servicePid: number): Map<string, number> {
  const all = new Map<string, number>();
  for (const [name, seconds] of runQueueSeconds(servicePid)) all.set(`service ${name}`, seconds);
  for (const [name, seconds] of runQueueSeconds(process.pid)) all.set(`bench ${name}`, seconds);
  return all;
}

/** Seconds in a stretch of `ms` as ms per second. */
function perSecond(seconds: Map<string, number>, ms: number): Map<string, number> {
  return new Map([...seconds].map(([name, value]) => [name, (1e6 * value) / Math.max(1, ms)]));
}

async function scrape(baseUrl: string): Promise<string> {
  return (await fetch(`${baseUrl}/metrics`)).text();
}

/** prom-client's event-loop delay gauges (since the previous scrape): p50 / p99 / max, ms. */
function loopDelay(metrics: string): string {
  const gauge = (name: string) => {
    const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${name} `));
    return line ? fixed(1000 * Number(line.split(' ')[1]), 1) : 'n/a';
  };
  return ['p50', 'p99', 'max'].map((which) => gauge(`nodejs_eventloop_lag_${which}_seconds`)).join(' / ');
}

/** Per thread group, the CPU seconds from `before` to `after`. */
function since(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([name, seconds]) => [name, seconds - (before.get(name) ?? 0)]));
}

/**
 * webhook_delivery_stage_seconds from a /metrics text: per stage, the count and the bucket bounds
 * (ms) holding the p50, the p99 and the largest sample (a Prometheus histogram keeps no more).
 */
function stageTable(metrics: string): string[][] {
  const buckets = new Map<string, { le: number; count: number }[]>();
  const pattern = /^webhook_delivery_stage_seconds_bucket\{([^}]*)\} (\d+)$/;
  for (const line of metrics.split('\n')) {
    const match = pattern.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...match[1].matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const { le, stage } = labels;
    const count = match[2];
    const list = buckets.get(stage) ?? [];
    list.push({ le: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le) * 1000, count: Number(count) });
    buckets.set(stage, list);
  }
  const order = ['relay', 'catch_up', 'queue', 'handoff', 'request', 'return'];
  return [...buckets.entries()]
    .sort(([a], [b]) => order.indexOf(a) - order.indexOf(b))
    .map(([stage, list]) => {
      list.sort((a, b) => a.le - b.le);
      const total = list.at(-1)?.count ?? 0;
      const at = (fraction: number) => {
        const bucket = list.find((entry) => entry.count >= Math.ceil(fraction * total));
        return bucket ? String(bucket.le) : 'n/a';
      };
      return [stage, String(total), at(0.5), at(0.99), at(1)];
    });
}

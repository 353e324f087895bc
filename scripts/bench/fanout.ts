// WebSocket fan-out: N clients on /ws subscribed to every event; a producer (an oracle) commits price
// posts (POST /api/v1/price/{id}) at a steady rate; each client's receipt of each priceUpdate is
// timed. The clients live in this process (lean RFC 6455 clients, lib/lean-ws.ts: a client library
// would take a whole core here and queue what it receives, adding its wait to every latency), the
// producer in a worker thread of it; the service is its own process. The Koa hello baseline gets the
// same clients and producer (POST /publish, broadcast with no database).
// Reported per target: delivered events (all clients) and per second, commit-to-delivery latency
// (receipt time minus the event's occurredAt; same host, same clock; a price post stamps it as it
// writes the event, the last statement of its transaction, so the figure counts that insert, the
// commit, the relay's read of the outbox, the fan-out and the client's receipt, but not the request's
// earlier work; the AsyncAPI contract documents what occurredAt is), request-to-delivery latency
// (from the moment the producer sent the POST: an upper bound that counts everything), the
// producer's request latency, unexpected closes, and the CPU of this load generator and of the
// target.
// Target (issue 5): p99 under 100 ms at 1,000 clients and 200 events/s.

import { Worker } from 'node:worker_threads';
import { createCollection, createCurrency, createUser, type Session } from '../lib/api.ts';
import type { Child } from '../lib/children.ts';
import { Histogram } from '../lib/histogram.ts';
import { cpuSeconds } from '../lib/proc.ts';
import { type Service, startService } from '../lib/service.ts';
import { openClients } from '../lib/ws-clients.ts';
import { startHello } from './lib/hello.ts';
import type { BenchOptions } from './lib/options.ts';
import type { ProducerResult } from './lib/producer.ts';
import type { ProducerJob } from './lib/producer-worker.ts';
import { record, round1, round4 } from './lib/record.ts';
import { fixed, heading, table } from './lib/report.ts';

const ASSET = 'fan-coin';
const DRAIN_MS = 5000;
const WARM_UP_SECONDS = 1;
const TARGET_P99_MS = 100;
const PRICE_UPDATE = Buffer.from('"type":"priceUpdate"');
const OCCURRED_AT = Buffer.from('"occurredAt":"');
const SOURCE = Buffer.from('"source":"bench-');
const QUOTE = 0x22;
const EVENT_ID = Buffer.from(',"id":"');

interface Target {
  name: string;
  child: Child;
  /** Credentials for the WebSocket handshake. */
  headers: Record<string, string>;
  /** Where and how the producer commits an event. */
  producer: Pick<ProducerJob, 'url' | 'headers' | 'extraBody'>;
}

interface CaseResult {
  delivered: number;
  expected: number;
  deliveredPerSecond: number;
  commitToDelivery: Histogram;
  requestToDelivery: Histogram;
  producerLatency: Histogram;
  committed: number;
  producerFailures: number;
  skipped: number;
  unexpectedCloses: string;
  loadCpuPercent: number;
  targetCpuPercent: number;
}

export async function fanout(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const targets = [helloTarget(hello), await serviceTarget(service)];
      for (const { clients, rate } of options.fanout) {
        heading(`fan-out on ${kind}: ${clients} clients, ${rate} events/s`, {
          'seconds of events': options.durationSeconds,
          'WebSocket client': options.wsClient,
        });
        const results: CaseResult[] = [];
        for (const target of targets) results.push(await runCase(target, clients, rate, options));
        const ms = (histogram: Histogram, fraction: number) => fixed(histogram.percentile(fraction), 1);
        table(
          ['', ...targets.map((target) => target.name)],
          [
            [
              'events committed',
              ...results.map(
                (r) =>
                  `${r.committed}${r.producerFailures ? ` (+${r.producerFailures} failed)` : ''}${r.skipped ? ` (${r.skipped} not sent: backlog)` : ''}`,
              ),
            ],
            [
              'deliveries / expected',
              ...results.map(
                (r) =>
                  `${r.delivered} / ${r.expected} (${fixed((100 * r.delivered) / Math.max(1, r.expected))}%)`,
              ),
            ],
            ['deliveries per second', ...results.map((r) => fixed(r.deliveredPerSecond, 0))],
            [
              'commit->delivery p50 / p99 ms',
              ...results.map((r) => `${ms(r.commitToDelivery, 0.5)} / ${ms(r.commitToDelivery, 0.99)}`),
            ],
            [
              'request->delivery p50 / p99 ms',
              ...results.map((r) => `${ms(r.requestToDelivery, 0.5)} / ${ms(r.requestToDelivery, 0.99)}`),
            ],
            [
              'producer request p50 / p99 ms',
              ...results.map((r) => `${ms(r.producerLatency, 0.5)} / ${ms(r.producerLatency, 0.99)}`),
            ],
            ['unexpected closes (code: n)', ...results.map((r) => r.unexpectedCloses)],
            ['load generator CPU (% of a core)', ...results.map((r) => fixed(r.loadCpuPercent, 0))],
            ['target process CPU (% of a core)', ...results.map((r) => fixed(r.targetCpuPercent, 0))],
          ],
        );
        console.log(
          'commit->delivery: receipt minus occurredAt, which the service stamps as it writes the event (the last statement before the commit): it counts that insert, the commit, the relay, the fan-out and the receipt; request->delivery counts everything from the POST.',
        );
        // The baseline sends each event to each socket with ws.send (a frame built per socket): when it
        // falls behind, its producer skips events, and the ratio shows how much more the service carries.
        console.log(
          `service deliveries/s: ${fixed((100 * results[1].deliveredPerSecond) / Math.max(1, results[0].deliveredPerSecond))}% of Koa hello's`,
        );
        const p99 = results[1].commitToDelivery.percentile(0.99);
        const [baseline, served] = results;
        record({
          benchmark: 'fanout',
          scenario: `${clients.toLocaleString('en-US')} clients at ${rate} events/s, ${kind}`,
          koaRatio: round4(served.deliveredPerSecond / Math.max(1, baseline.deliveredPerSecond)),
          figures: [
            {
              name: 'commit→delivery p50',
              value: round1(served.commitToDelivery.percentile(0.5)),
              unit: 'ms',
            },
            { name: 'commit→delivery p99', value: round1(p99), unit: 'ms' },
            { name: 'deliveries', value: Math.round(served.deliveredPerSecond), unit: '/s' },
            { name: 'delivered', value: round4(served.delivered / Math.max(1, served.expected)), unit: '%' },
          ],
          targets:
            clients === 1000 && rate === 200
              ? [{ figure: 'commit→delivery p99', below: TARGET_P99_MS, source: 'issue 5' }]
              : [],
        });
        if (clients === 1000 && rate === 200) {
          console.log(
            `service commit->delivery p99 ${fixed(p99, 1)} ms (target < ${TARGET_P99_MS} ms: ${p99 < TARGET_P99_MS ? 'met' : 'NOT met'})`,
          );
        }
      }
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

export function helloTarget(hello: Child): Target {
  return {
    name: 'Koa hello',
    child: hello,
    headers: {},
    producer: { url: `${hello.baseUrl}/publish`, headers: {}, extraBody: { assetId: ASSET } },
  };
}

/** A studio creates the currency prices are posted for; an oracle posts them; a player listens. */
export async function serviceTarget(service: Service): Promise<Target> {
  const studio = await createUser(service, 'studio');
  await createCollection(service, studio, 'bench-fanout');
  await createCurrency(service, studio, ASSET, 'bench-fanout');
  const oracle: Session = await createUser(service, 'oracle');
  const listener = await createUser(service);
  return {
    name: `service (${service.kind})`,
    child: service,
    headers: listener.headers,
    producer: { url: `${service.baseUrl}/api/v1/price/${ASSET}`, headers: oracle.headers, extraBody: {} },
  };
}

/** Runs the producer in a worker thread (see producer-worker.ts) and waits for its result. */
function produceInWorker(job: ProducerJob): Promise<ProducerResult> {
  const worker = new Worker(new URL('./lib/producer-worker.ts', import.meta.url), { workerData: job });
  return new Promise((resolve, reject) => {
    worker.once('message', (result: ProducerResult) => resolve(result));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the producer worker exited with code ${code}`)));
  });
}

/** The event id of an event message (`..."id":"123",...` after the subscription ids), -1 if none. */
function eventId(data: Buffer, start: number, end: number): number {
  const at = data.indexOf(EVENT_ID, start);
  if (at < 0 || at >= end) return -1;
  let id = 0;
  for (let index = at + EVENT_ID.length; index < end; index++) {
    const digit = data[index] - 0x30;
    if (digit < 0 || digit > 9) return data[index] === QUOTE ? id : -1;
    id = id * 10 + digit;
  }
  return -1;
}

/** Epoch milliseconds with sub-millisecond precision, comparable with the server's occurredAt. */
function now(): number {
  return performance.timeOrigin + performance.now();
}

export async function runCase(
  target: Target,
  clients: number,
  rate: number,
  options: BenchOptions,
): Promise<CaseResult> {
  const seconds = options.durationSeconds;
  const total = Math.round(rate * seconds);
  const sentAtBuffer = new SharedArrayBuffer(total * Float64Array.BYTES_PER_ELEMENT);
  const sentAt = new Float64Array(sentAtBuffer);
  const job = (firstSequence: number, jobSeconds: number): ProducerJob => ({
    ...target.producer,
    rate,
    seconds: jobSeconds,
    firstSequence,
    sentAt: sentAtBuffer,
  });
  const commitToDelivery = new Histogram();
  const requestToDelivery = new Histogram();
  let delivered = 0;
  let deliveredInWindow = 0;
  let windowEnd = Number.POSITIVE_INFINITY;
  let measuring = false;

  // Every client receives the same bytes for an event: the fields measured are read from the bytes
  // once per event, found again by its id (no decoding, no JSON.parse), so that the load generator's
  // own cost, which adds to every measured latency, stays small.
  const seen = new Map<number, { occurredAt: number; sequence: number }>();
  const onMessage = (data: Buffer, start: number, end: number) => {
    if (!measuring) return;
    const receivedAt = now();
    const id = eventId(data, start, end);
    if (id < 0) return;
    let event = seen.get(id);
    if (event === undefined) {
      event = { occurredAt: 0, sequence: -1 };
      seen.set(id, event);
      const payload = data.subarray(start, end);
      if (payload.includes(PRICE_UPDATE)) {
        const occurredAt = payload.indexOf(OCCURRED_AT) + OCCURRED_AT.length;
        const source = payload.indexOf(SOURCE) + SOURCE.length;
        const sequence = Number.parseInt(
          payload.toString('latin1', source, payload.indexOf(QUOTE, source)),
          10,
        );
        // A late warm-up event (its sequence runs past the measured ones) is not measured.
        if (sequence < total) {
          event.sequence = sequence;
          event.occurredAt = Date.parse(payload.toString('latin1', occurredAt, occurredAt + 24));
        }
      }
    }
    if (event.sequence < 0) return;
    commitToDelivery.record(receivedAt - event.occurredAt);
    requestToDelivery.record(receivedAt - sentAt[event.sequence]);
    delivered++;
    if (receivedAt <= windowEnd) deliveredInWindow++;
  };

  const url = `${target.child.baseUrl.replace(/^http/, 'ws')}/ws`;
  const fleet = await openClients(url, clients, target.headers, { onMessage, client: options.wsClient });
  try {
    await fleet.subscribeAll();
    // Warm-up events (JIT, pools, buffers) at the same rate, not counted; their sequence numbers run
    // past the measured ones so that a late one cannot be mistaken for a measured one.
    await produceInWorker(job(total, WARM_UP_SECONDS));
    await new Promise((resolve) => setTimeout(resolve, 500));
    measuring = true;
    const cpuBefore = process.cpuUsage();
    const targetCpuBefore = cpuSeconds(target.child.pid);
    const windowStart = now();
    const produced = await produceInWorker(job(0, seconds));
    windowEnd = now();
    const expected = produced.succeeded * clients;
    const drainUntil = Date.now() + DRAIN_MS;
    while (delivered < expected && Date.now() < drainUntil)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const wall = (now() - windowStart) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      delivered,
      expected,
      deliveredPerSecond: deliveredInWindow / ((windowEnd - windowStart) / 1000),
      commitToDelivery,
      requestToDelivery,
      producerLatency: Histogram.of(produced.latencies),
      committed: produced.succeeded,
      producerFailures: produced.failed,
      skipped: produced.skipped,
      unexpectedCloses:
        [...fleet.unexpectedCloses].map(([code, count]) => `${code}: ${count}`).join(', ') || 'none',
      loadCpuPercent: ((cpu.user + cpu.system) / 1e6 / wall) * 100,
      targetCpuPercent: ((cpuSeconds(target.child.pid) - targetCpuBefore) / wall) * 100,
    };
  } finally {
    await fleet.closeAll();
  }
}

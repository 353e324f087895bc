// The dispatcher's side of the sender thread (send-worker.ts): one worker, and one ordered stream of
// commands to it, the commands given during one turn of the event loop in one message (a message
// costs about as much as a request, so not one each); the thread answers in batches too.
// - series: requests in flight matched to their answers (one per request, as it comes) by number;
// - streams: a subscription's fast path runs in the thread (send-worker.ts), which reports its
//   deliveries in batches; the relay's events are posted once per batch for every stream, and only
//   while a stream runs.
// Hand-written on node:worker_threads (as the JSON-LD pool). If the thread dies, the requests in
// flight fail (they are retried as any failed attempt), every stream ends (stopped, with what it had
// reported: the rest is sent again from the cursor) and the next command starts a new thread.
import { Worker } from 'node:worker_threads';
import { clock } from './clock.ts';
import type { SendCommand, SendReport, Sent, StreamEvent, StreamReport, StreamStart } from './send-worker.ts';
import type { Outcome } from './sender.ts';
import type { TargetPolicy } from './targets.ts';

export type { Sent, StreamEvent, StreamReport, StreamStart } from './send-worker.ts';

/** Numbers per delivery in a stream report's `numbers` (send-worker.ts). */
export const DELIVERY_FIELDS = 7;

const WORKER_FILE = new URL('./send-worker.ts', import.meta.url);

type SendOptions = TargetPolicy & { timeoutMs: number; userAgent: string };

/** One message's answer: its outcome and times, when its series was handed over and when this answer came. */
export interface Answer extends Sent {
  postedAt: number;
  answeredAt: number;
}

export interface SendThread {
  send(
    url: string,
    message: { id: string; body: string; secrets: string[] },
    options: SendOptions,
  ): Promise<Outcome>;
  /**
   * Sends one subscription's messages one after the other, stopping at the first that fails; `each`
   * hears every answer as it comes, in order. Resolves after the last.
   */
  series(
    url: string,
    messages: { id: string; body: string }[],
    secrets: string[],
    options: SendOptions,
    each: (answer: Answer) => void,
  ): Promise<void>;
  /**
   * Starts a subscription's stream: `report` hears its reports, in order, the last one `stopped`
   * (after `stopStream`, its first failure, or the thread's death).
   */
  startStream(stream: StreamStart, report: (report: StreamReport) => void): void;
  /** The relay's new events, for every running stream (nothing is posted while none runs). */
  events(events: readonly StreamEvent[]): void;
  /** The stream's subscription signs with these secrets from its next request. */
  streamSecrets(id: string, gen: number, secrets: string[]): void;
  /** Ends the stream after its request in flight (its last report says `stopped`). */
  stopStream(id: string, gen: number): void;
  /**
   * Resolves once every stream delivery made so far (and each request in flight) has been reported:
   * of the streams of the subscriptions `ids`, or of every stream without `ids`.
   */
  sync(ids?: string[]): Promise<void>;
  /** Starts the thread now if it is not running (it takes ~0.1 s): deliveries are coming. */
  warm(): void;
  close(): Promise<void>;
}

export function createSendThread(): SendThread {
  let worker: Worker | null = null;
  const pending = new Map<number, (sent: Sent, last: boolean) => void>();
  /** Running streams, by subscription id: their generation and reader. */
  const streams = new Map<string, { gen: number; report: (report: StreamReport) => void }>();
  let next = 1;
  const syncs = new Map<number, () => void>();
  /** Commands not posted yet: they go together, in order, at the end of this turn of the event loop. */
  let outgoing: SendCommand[] = [];
  let handing: NodeJS.Immediate | null = null;

  function handOver(): void {
    handing = null;
    const batch = outgoing;
    outgoing = [];
    if (batch.length > 0) thread().postMessage(batch);
  }

  function command(next: SendCommand): void {
    outgoing.push(next);
    handing ??= setImmediate(handOver);
  }

  function failAll(reason: string): void {
    const now = clock();
    const answers = [...pending.values()];
    pending.clear();
    for (const answer of answers)
      answer({ outcome: { ok: false, statusCode: null, error: reason }, startedAt: now, doneAt: now }, true);
    const ended = [...streams.entries()];
    streams.clear();
    for (const [id, { gen, report }] of ended)
      report({ id, gen, numbers: [], ids: [], types: [], confirmed: -1, stopped: true });
    const waiting = [...syncs.values()];
    syncs.clear();
    for (const resolve of waiting) resolve();
  }

  function thread(): Worker {
    if (worker) return worker;
    const started = new Worker(WORKER_FILE);
    started.on('message', ({ done, streams: reports, synced }: SendReport) => {
      for (const answered of done) {
        const answer = pending.get(answered.n);
        if (answered.last) pending.delete(answered.n);
        answer?.(answered.sent, answered.last);
      }
      for (const report of reports) {
        const stream = streams.get(report.id);
        if (stream?.gen !== report.gen) continue;
        if (report.stopped) streams.delete(report.id);
        stream.report(report);
      }
      for (const n of synced) {
        syncs.get(n)?.();
        syncs.delete(n);
      }
    });
    const lost = (reason: string) => {
      if (worker !== started) return;
      worker = null;
      failAll(reason);
    };
    started.on('error', (error) => lost(`the webhook sender thread failed: ${error.message}`));
    started.on('exit', (code) => lost(`the webhook sender thread exited (${code})`));
    worker = started;
    return started;
  }

  function series(
    url: string,
    messages: { id: string; body: string }[],
    secrets: string[],
    options: SendOptions,
    each: (answer: Answer) => void,
  ): Promise<void> {
    const n = next++;
    const postedAt = clock();
    return new Promise<void>((resolve) => {
      pending.set(n, (sent, last) => {
        each({ ...sent, postedAt, answeredAt: clock() });
        if (last) resolve();
      });
      const { allowLoopback, allowedNetworks, timeoutMs, userAgent } = options;
      command({
        kind: 'series',
        task: {
          n,
          url,
          messages,
          secrets,
          options: { allowLoopback, allowedNetworks, timeoutMs, userAgent },
        },
      });
    });
  }

  return {
    series,
    async send(url, { id, body, secrets }, options) {
      let outcome: Outcome = { ok: false, statusCode: null, error: 'no answer' };
      await series(url, [{ id, body }], secrets, options, (answer) => {
        outcome = answer.outcome;
      });
      return outcome;
    },
    startStream(stream, report) {
      const { allowLoopback, allowedNetworks, timeoutMs, userAgent } = stream.options;
      streams.set(stream.id, { gen: stream.gen, report });
      command({
        kind: 'start',
        stream: { ...stream, options: { allowLoopback, allowedNetworks, timeoutMs, userAgent } },
      });
    },
    events(events) {
      if (streams.size === 0 || events.length === 0) return;
      command({ kind: 'events', events: events as StreamEvent[] });
    },
    streamSecrets(id, gen, secrets) {
      if (streams.get(id)?.gen === gen) command({ kind: 'secrets', id, gen, secrets });
    },
    stopStream(id, gen) {
      if (streams.get(id)?.gen === gen) command({ kind: 'stop', id, gen });
    },
    sync(ids) {
      if (!worker || streams.size === 0) return Promise.resolve();
      const named = ids?.filter((id) => streams.has(id));
      if (named?.length === 0) return Promise.resolve();
      const n = next++;
      return new Promise<void>((resolve) => {
        syncs.set(n, resolve);
        command(named ? { kind: 'sync', n, ids: named } : { kind: 'sync', n });
      });
    },
    warm() {
      thread();
    },
    async close() {
      if (handing) clearImmediate(handing);
      handing = null;
      outgoing = [];
      const current = worker;
      worker = null;
      failAll('the service is stopping');
      if (current) await current.terminate();
    },
  };
}

// The dispatcher's side of the sender thread (send-worker.ts): one worker, series of requests in
// flight matched to their answers (one per request, as it comes) by number. Hand-written on
// node:worker_threads (as the JSON-LD pool): one message type each way, each a batch (the series
// handed over in one turn of the event loop go in one message, and the thread answers what it has in
// one message per turn of its own: a message costs about as much as a request, so not one each). If
// the thread dies, the requests in flight fail (they are retried as any failed attempt) and the next
// request starts a new thread.
import { Worker } from 'node:worker_threads';
import type { SendDone, SendTask, Sent } from './send-worker.ts';
import type { Outcome } from './sender.ts';
import type { TargetPolicy } from './targets.ts';

export type { Sent } from './send-worker.ts';

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
  /** Starts the thread now if it is not running (it takes ~0.1 s): deliveries are coming. */
  warm(): void;
  close(): Promise<void>;
}

const clock = () => performance.timeOrigin + performance.now();

export function createSendThread(): SendThread {
  let worker: Worker | null = null;
  const pending = new Map<number, (sent: Sent, last: boolean) => void>();
  let next = 1;
  /** Series not handed over yet: they go together, at the end of this turn of the event loop. */
  let outgoing: SendTask[] = [];
  let handing: NodeJS.Immediate | null = null;

  function handOver(): void {
    handing = null;
    const batch = outgoing;
    outgoing = [];
    if (batch.length > 0) thread().postMessage(batch);
  }

  function failAll(reason: string): void {
    const now = clock();
    const answers = [...pending.values()];
    pending.clear();
    for (const answer of answers)
      answer({ outcome: { ok: false, statusCode: null, error: reason }, startedAt: now, doneAt: now }, true);
  }

  function thread(): Worker {
    if (worker) return worker;
    const started = new Worker(WORKER_FILE);
    started.on('message', (batch: SendDone[]) => {
      for (const done of batch) {
        const answer = pending.get(done.n);
        if (done.last) pending.delete(done.n);
        answer?.(done.sent, done.last);
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
      outgoing.push({
        n,
        url,
        messages,
        secrets,
        options: { allowLoopback, allowedNetworks, timeoutMs, userAgent },
      });
      handing ??= setImmediate(handOver);
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

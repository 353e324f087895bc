// The dispatcher's side of the sender thread (send-worker.ts): one worker, requests in flight
// matched to their answers by number. Hand-written on node:worker_threads (as the JSON-LD pool):
// one message type each way. If the thread dies, the requests in flight fail (they are retried as any
// failed attempt) and the next request starts a new thread.
import { Worker } from 'node:worker_threads';
import type { SendDone, SendTask } from './send-worker.ts';
import type { Outcome } from './sender.ts';
import type { TargetPolicy } from './targets.ts';

const WORKER_FILE = new URL('./send-worker.ts', import.meta.url);

/** Where a request's time went (ms): to the thread, the request itself, the answer back. */
export interface SendTimings {
  handoffMs: number;
  requestMs: number;
  returnMs: number;
}

export interface SendThread {
  send(
    url: string,
    message: { id: string; body: string; secrets: string[] },
    options: TargetPolicy & { timeoutMs: number; userAgent: string },
    /** Told where the time went (not when the thread was lost). */
    timed?: (timings: SendTimings) => void,
  ): Promise<Outcome>;
  /** Starts the thread now if it is not running (it takes ~0.1 s): deliveries are coming. */
  warm(): void;
  close(): Promise<void>;
}

export function createSendThread(): SendThread {
  let worker: Worker | null = null;
  const pending = new Map<number, (outcome: Outcome, done?: SendDone) => void>();
  const clock = () => performance.timeOrigin + performance.now();
  let next = 1;

  function failAll(reason: string): void {
    for (const resolve of pending.values()) resolve({ ok: false, statusCode: null, error: reason });
    pending.clear();
  }

  function thread(): Worker {
    if (worker) return worker;
    const started = new Worker(WORKER_FILE);
    started.on('message', (done: SendDone) => {
      const resolve = pending.get(done.n);
      pending.delete(done.n);
      resolve?.(done.outcome, done);
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

  return {
    send(url, message, options, timed) {
      const n = next++;
      const postedAt = clock();
      return new Promise<Outcome>((resolve) => {
        pending.set(n, (outcome, done) => {
          if (done && timed)
            timed({
              handoffMs: done.startedAt - postedAt,
              requestMs: done.doneAt - done.startedAt,
              returnMs: clock() - done.doneAt,
            });
          resolve(outcome);
        });
        const { allowLoopback, allowedNetworks, timeoutMs, userAgent } = options;
        thread().postMessage({
          n,
          url,
          ...message,
          options: { allowLoopback, allowedNetworks, timeoutMs, userAgent },
          postedAt,
        } satisfies SendTask);
      });
    },
    warm() {
      thread();
    },
    async close() {
      const current = worker;
      worker = null;
      failAll('the service is stopping');
      if (current) await current.terminate();
    },
  };
}

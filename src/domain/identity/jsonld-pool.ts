// A small pool of worker threads for the JSON-LD work of verification (13.4): canonicalizing a
// large credential takes a core for a fifth of a second, which on the event loop stalls every
// other request. Hand-written on node:worker_threads rather than a pool library: one task type,
// a queue and crash replacement are all it needs.
import { Worker } from 'node:worker_threads';
import type { JsonLdOutcome, JsonLdTask } from './jsonld-work.ts';

export interface JsonLdPool {
  run(task: JsonLdTask): Promise<JsonLdOutcome>;
  close(): Promise<void>;
}

interface Pending {
  id: number;
  task: JsonLdTask;
  resolve(outcome: JsonLdOutcome): void;
  reject(error: Error): void;
}

const WORKER_FILE = new URL('./jsonld-worker.ts', import.meta.url);

export function createJsonLdPool(size: number): JsonLdPool {
  const idle: Worker[] = [];
  const busy = new Map<Worker, Pending>();
  const queue: Pending[] = [];
  let started = 0;
  let nextId = 1;
  let closed = false;

  function spawn(): Worker {
    const worker = new Worker(WORKER_FILE);
    worker.unref();
    started++;
    worker.on('message', (message: { id: number; outcome?: JsonLdOutcome; error?: string }) => {
      const pending = busy.get(worker);
      busy.delete(worker);
      if (pending?.id === message.id) {
        if (message.outcome) pending.resolve(message.outcome);
        else pending.reject(new Error(message.error ?? 'worker failure'));
      }
      release(worker);
    });
    const lost = (error: Error) => {
      const pending = busy.get(worker);
      busy.delete(worker);
      if (idle.includes(worker)) idle.splice(idle.indexOf(worker), 1);
      started--;
      pending?.reject(error);
      if (!closed && queue.length) dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => {
      if (busy.has(worker) || code !== 0) lost(new Error(`verification worker exited (${code})`));
    });
    return worker;
  }

  function release(worker: Worker): void {
    const next = queue.shift();
    if (next) send(worker, next);
    else idle.push(worker);
  }

  function send(worker: Worker, pending: Pending): void {
    busy.set(worker, pending);
    worker.postMessage({ id: pending.id, task: pending.task });
  }

  function dispatch(): void {
    const pending = queue.shift();
    if (!pending) return;
    const worker = idle.pop() ?? (started < size ? spawn() : undefined);
    if (worker) send(worker, pending);
    else queue.unshift(pending);
  }

  return {
    run(task) {
      if (closed) return Promise.reject(new Error('the verification pool is closed'));
      return new Promise<JsonLdOutcome>((resolve, reject) => {
        queue.push({ id: nextId++, task, resolve, reject });
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const pending of queue.splice(0)) pending.reject(new Error('the verification pool is closed'));
      await Promise.all([...idle, ...busy.keys()].map((worker) => worker.terminate()));
    },
  };
}

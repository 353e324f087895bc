// The SQLite adapter's holdings listings, run on a thread of their own: the statement, the views and the
// JSON of a listing answered from the database (a cache miss, `Cache-Control: no-cache`) take most of
// its cost, and the driver runs them synchronously. On the thread they use the second core, and the
// event loop (every other request, the WebSocket fan-out) is free while they run.
// The thread has its own read-only connection on the file (WAL: it reads the last committed state,
// never waits for the writer): a listing asked after a commit was answered reads that commit. It keeps
// its own assets' fixed views (../fixed-views.ts), dropped when another process commits to the file
// (the event loop's count of such commits comes with every request).
// A thread that fails or stops fails the listings waiting on it (500) and is started again by the
// next one. PostgreSQL's listings stay on the event loop: the driver's I/O is asynchronous already.
// Hand-written on node:worker_threads, as the verification pool (../../../identity/jsonld-pool.ts) and
// the webhook sender (../../../../webhooks/send-thread.ts) are: one task type, many in flight on one thread,
// answers moved rather than copied, and domain errors carried across.
import { Worker } from 'node:worker_threads';
import { AppError, type FieldError, type ProblemType } from '../../../errors.ts';
import type { HoldingListing, ListingRequest } from '../port.ts';
import { listingChangeKeys } from '../queries.ts';

/** What the thread is started with. */
export interface HoldingThreadData {
  /** The SQLite file. */
  path: string;
  /** A zero balance as the balance column stores it. */
  zero: unknown;
  /** The most fixed views the thread keeps (ASSET_VIEW_CACHE_ENTRIES; unset: the default). */
  viewsKept?: number;
}

/** A request to the thread. */
export interface HoldingThreadRequest {
  id: number;
  request: ListingRequest;
  /** The event loop's count of commits by other processes (../fixed-views.ts). */
  externalCommits: number;
}

/**
 * The thread's answer: the listing (its JSON's bytes moved, not copied; its change keys are derived
 * here, from what it lists, not copied across), or why it failed.
 */
export type HoldingThreadAnswer =
  | (Omit<HoldingListing, 'body' | 'keys'> & { id: number; bytes: ArrayBuffer })
  | { id: number; problem: ProblemFields }
  | { id: number; failure: string };

/** A domain error as it crosses the thread boundary (AppError's fields; the title follows the type). */
export interface ProblemFields {
  status: number;
  type: ProblemType;
  detail: string | undefined;
  errors: FieldError[] | undefined;
  headers: Record<string, string>;
  extensions: Record<string, unknown>;
}

export function problemFields(error: AppError): ProblemFields {
  const { status, type, detail, errors, headers, extensions } = error;
  return { status, type, detail, errors, headers, extensions };
}

export interface HoldingThread {
  list(request: ListingRequest): Promise<HoldingListing>;
  /** Stops the thread (the database is closing); listings asked after it start it again. */
  close(): Promise<void>;
}

interface Waiting {
  resolve(listing: Omit<HoldingListing, 'keys'>): void;
  reject(error: Error): void;
}

export function holdingThread(data: HoldingThreadData, externalCommits: () => number): HoldingThread {
  /** The running thread and the listings waiting on it (a stopped thread fails only its own). */
  let current: { worker: Worker; waiting: Map<number, Waiting> } | undefined;
  let nextId = 0;

  function start(): NonNullable<typeof current> {
    const worker = new Worker(new URL('./worker.ts', import.meta.url), { workerData: data });
    const waiting = new Map<number, Waiting>();
    const started = { worker, waiting };
    // The server keeps the process alive; a thread left idle must not.
    worker.unref();
    worker.on('message', (answer: HoldingThreadAnswer) => {
      const entry = waiting.get(answer.id);
      if (!entry) return;
      waiting.delete(answer.id);
      if ('bytes' in answer)
        entry.resolve({
          body: Buffer.from(answer.bytes),
          assetIds: answer.assetIds,
          wallets: answer.wallets,
        });
      else if ('problem' in answer) entry.reject(appErrorOf(answer.problem));
      else entry.reject(new Error(`holdings listing failed: ${answer.failure}`));
    });
    const stopped = (error: Error) => {
      if (current === started) current = undefined;
      for (const { reject } of waiting.values()) reject(error);
      waiting.clear();
    };
    worker.on('error', (error) => stopped(error));
    worker.on('exit', (code) =>
      stopped(new Error(`the holdings listing thread stopped (exit code ${code})`)),
    );
    return started;
  }

  return {
    list(request) {
      current ??= start();
      const { worker, waiting } = current;
      const id = ++nextId;
      const message: HoldingThreadRequest = { id, request, externalCommits: externalCommits() };
      return new Promise<HoldingListing>((resolve, reject) => {
        waiting.set(id, {
          resolve: (listing) =>
            resolve({ ...listing, keys: listingChangeKeys(request, listing.assetIds, listing.wallets) }),
          reject,
        });
        worker.postMessage(message);
      });
    },
    async close() {
      const stopping = current;
      current = undefined;
      if (stopping) await stopping.worker.terminate();
    },
  };
}

function appErrorOf(fields: ProblemFields): AppError {
  const { status, type, detail, errors, headers, extensions } = fields;
  return new AppError(status, type, { detail, errors, headers, extensions });
}

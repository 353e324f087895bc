// SQLite checkpoints off the event loop. A checkpoint copies the WAL back into the database file and
// syncs both; with `wal_autocheckpoint` (./orm.ts) it runs inside the commit that crosses the
// threshold, on the ORM's connection, so the event loop (every request, the WebSocket fan-out)
// waits for it. On a small file that is a few milliseconds; on a file of gigabytes the 10,000 pages
// are spread over the file, and the transfers' p99 at 1,000,000 holdings was 187-196 ms with them
// against 26-39 ms with this thread (docs/benchmarks.md, Scale; issue 34). The service (src/app.ts, once migrated) therefore turns the ORM
// connection's automatic checkpoints off and runs them on a thread with a connection of its own
// (./sqlite-checkpoint-worker.ts): PASSIVE checkpoints, which neither wait for the writer nor block
// it, every INTERVAL_MS, and past SQLITE_AUTOCHECKPOINT_PAGES of WAL a RESTART one, which holds the
// writer off only while it copies what the PASSIVE one left (./sqlite-checkpoint-worker.ts says why).
// Operator commands keep the automatic checkpoints (they write little, briefly).
// A thread that fails or stops puts the automatic checkpoints back (the WAL stays bounded) and says so.
// Hand-written on node:worker_threads, as the listings' thread is (../domain/ledger/reads/sqlite/thread.ts).
import { Worker } from 'node:worker_threads';
import type { Logger } from '../observability/logger.ts';
import { databaseFile } from './dialect.ts';
import { type Orm, SQLITE_AUTOCHECKPOINT_PAGES } from './orm.ts';

/** What the thread is started with. */
export interface CheckpointThreadData {
  /** The SQLite file. */
  path: string;
  intervalMs: number;
  /** The WAL's size in pages past which the thread makes sure the next transaction starts it again. */
  restartPages: number;
}

/** What the thread says: only that a checkpoint failed (it goes on trying). */
export interface CheckpointThreadMessage {
  failure: string;
}

/**
 * How often the thread checkpoints. At the transfer load's write rate this copies a few thousand
 * pages a time, about what one automatic checkpoint of 10,000 pages did every second or so.
 */
const INTERVAL_MS = 200;

/** How long closing waits for the thread's last checkpoint before stopping it hard. */
const STOP_TIMEOUT_MS = 5_000;

/** The thread's body. */
const CHECKPOINT_WORKER = new URL('./sqlite-checkpoint-worker.ts', import.meta.url);

/**
 * Starts the checkpoint thread for a SQLite database and turns the ORM connection's automatic
 * checkpoints off; returns what stops it (before the ORM closes: closing the last connection
 * checkpoints what is left). PostgreSQL: nothing. `script` is the thread's body: the service's
 * own; a test gives one that fails, to see the automatic checkpoints come back.
 */
export async function checkpointOnThread(
  orm: Orm,
  logger: Logger,
  script: URL = CHECKPOINT_WORKER,
): Promise<() => Promise<void>> {
  const path = databaseFile(orm);
  if (path === undefined) return async () => {};
  const connection = orm.em.getConnection();
  const autocheckpoint = (pages: number) => connection.execute(`pragma wal_autocheckpoint = ${pages}`);
  await autocheckpoint(0);
  const data: CheckpointThreadData = {
    path,
    intervalMs: INTERVAL_MS,
    restartPages: SQLITE_AUTOCHECKPOINT_PAGES,
  };
  const worker = new Worker(script, { workerData: data });
  // The server keeps the process alive; the thread must not.
  worker.unref();
  let stopping = false;
  let reported = false;
  worker.on('message', (message: CheckpointThreadMessage) => {
    if (reported) return;
    reported = true; // once: a failing checkpoint fails again at each tick
    logger.warn(
      { failure: message.failure },
      'SQLite checkpoint failed on the checkpoint thread (it keeps trying)',
    );
  });
  let over = false;
  const exited = new Promise<void>((resolve) => {
    // 'error' is followed by 'exit': what follows the end runs once.
    const ended = (error?: Error) => {
      resolve();
      if (stopping || over) return;
      over = true;
      logger.warn({ err: error }, 'SQLite checkpoint thread stopped: automatic checkpoints are back');
      autocheckpoint(SQLITE_AUTOCHECKPOINT_PAGES).catch(() => undefined);
    };
    worker.on('error', ended);
    worker.on('exit', () => ended());
  });
  return async () => {
    if (stopping) return exited;
    stopping = true;
    // Closing waits for the thread's checkpoint in progress (the ORM's connection closes next).
    worker.ref();
    worker.postMessage('stop');
    const timeout = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timeout);
  };
}

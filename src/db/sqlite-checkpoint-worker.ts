// The SQLite checkpoint thread's body (./sqlite-checkpoints.ts): its own connection on the file,
// a PASSIVE checkpoint every `intervalMs`, repeated at once while it leaves frames behind (new
// commits arrived during the copy). PASSIVE never waits for the writer nor blocks it, but the WAL
// only starts again from its beginning when a transaction begins after a checkpoint copied all of it:
// under a steady stream of commits one always begins during the copy, and the WAL file grows. Once it
// holds `restartPages`, a RESTART checkpoint follows the PASSIVE one: when no transaction is in
// flight it holds the writer off while it copies the few frames the PASSIVE pass left and syncs, so
// the next transaction starts the WAL again. It is tried a few times a few milliseconds apart, as
// the writer's transactions leave it gaps.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { CheckpointThreadData, CheckpointThreadMessage } from './sqlite-checkpoints.ts';

const { path, intervalMs, restartPages } = workerData as CheckpointThreadData;
const port = parentPort;
if (!port) throw new Error('the checkpoint thread runs as a worker');

// better-sqlite3, the ORM's driver: one SQLite library in the process (./sqlite-read-statements.ts says why).
// The timeout while preparing: its reads of the schema may meet a writer's lock while the writer
// recovers the WAL.
const database = new Database(path, { timeout: 5000 });
const passive = database.prepare('pragma wal_checkpoint(passive)');
const restart = database.prepare('pragma wal_checkpoint(restart)');
// Then none: a RESTART that finds the writer in a transaction, or a reader (a backup's, say) still on
// the WAL, gives up at once (tried again RESTART_PAUSE_MS later, then at the next tick). With a timeout it would hold the
// writer lock while it waited for the reader, and every commit on the event loop would wait with it.
database.pragma('busy_timeout = 0');
interface Checkpoint {
  /** 1 when it could not do all it was asked (another checkpoint, the writer or a reader was in the way). */
  busy: number;
  /** Frames in the WAL, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
}
/** Passes at one tick: the first, then the repeats while commits keep landing during the copy. */
const PASSES = 3;

/** RESTART attempts at one tick, RESTART_PAUSE_MS apart: a writer's transactions leave it gaps. */
const RESTART_ATTEMPTS = 20;
const RESTART_PAUSE_MS = 5;
const pause = new Int32Array(new SharedArrayBuffer(4));

function restartSoon(): void {
  for (let attempt = 0; attempt < RESTART_ATTEMPTS; attempt++) {
    if ((restart.get() as Checkpoint).busy === 0) return;
    // The thread waits, not the event loop.
    Atomics.wait(pause, 0, 0, RESTART_PAUSE_MS);
  }
}

function tick(): void {
  try {
    let frames = 0;
    for (let pass = 0; pass < PASSES; pass++) {
      const { busy, log, checkpointed } = passive.get() as Checkpoint;
      frames = log;
      if (busy !== 0 || log <= 0 || checkpointed >= log) break;
    }
    if (frames >= restartPages) restartSoon();
  } catch (error) {
    port?.postMessage({ failure: String(error) } satisfies CheckpointThreadMessage);
  }
}

const timer = setInterval(tick, intervalMs);
port.on('message', (message: 'stop') => {
  if (message !== 'stop') return;
  clearInterval(timer);
  database.close();
  port.close();
});

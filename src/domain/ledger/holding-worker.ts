// The holdings listings' thread (holding-thread.ts): answers each request with the listing's JSON,
// computed by the same code as on the event loop (holding-reads.ts) over a read-only connection of
// its own.
import { parentPort, workerData } from 'node:worker_threads';
import { sqliteReadStatements } from '../../db/read-statements.ts';
import { AppError } from '../errors.ts';
import { createHoldingReads, holdingListing } from './holding-reads.ts';
import {
  type HoldingThreadAnswer,
  type HoldingThreadData,
  type HoldingThreadRequest,
  problemFields,
} from './holding-thread.ts';

const port = parentPort;
if (!port) throw new Error('holding-worker.ts runs as a worker thread (holding-thread.ts)');
const data = workerData as HoldingThreadData;
let externalCommits = 0;
const reads = createHoldingReads(sqliteReadStatements(data.path), data.zero, () => externalCommits);

/** Answers a batch of requests (those the event loop handed over together) with one message. */
port.on('message', async (batch: HoldingThreadRequest[]) => {
  const answers: HoldingThreadAnswer[] = [];
  const moved: ArrayBuffer[] = [];
  for (const { id, request, externalCommits: count } of batch) {
    externalCommits = count;
    try {
      const listing = await holdingListing(reads, request);
      // Its own ArrayBuffer (a Buffer may share a pooled one), moved to the event loop, not copied.
      const bytes = new Uint8Array(listing.body).buffer;
      answers.push({ id, bytes, assetIds: listing.assetIds, wallets: listing.wallets });
      moved.push(bytes);
    } catch (error) {
      answers.push(
        error instanceof AppError
          ? { id, problem: problemFields(error) }
          : { id, failure: error instanceof Error ? error.message : String(error) },
      );
    }
  }
  port.postMessage(answers, moved);
});

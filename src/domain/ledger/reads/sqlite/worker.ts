// The SQLite adapter's listings thread (./thread.ts): answers each request with the listing's JSON,
// computed by the same code as on the event loop (../holdings.ts) over a read-only connection of its
// own.
import { parentPort, workerData } from 'node:worker_threads';
import { sqliteReadStatements } from '../../../../db/sqlite-read-statements.ts';
import { AppError } from '../../../errors.ts';
import { listingReads } from '../holdings.ts';
import { holdingListing } from '../queries.ts';
import {
  type HoldingThreadAnswer,
  type HoldingThreadData,
  type HoldingThreadRequest,
  problemFields,
} from './thread.ts';

const port = parentPort;
if (!port) throw new Error('worker.ts runs as a worker thread (thread.ts)');
const data = workerData as HoldingThreadData;
let externalCommits = 0;
const reads = listingReads(sqliteReadStatements(data.path), data.zero, () => externalCommits, {
  viewsKept: data.viewsKept,
});

port.on('message', async ({ id, request, externalCommits: count }: HoldingThreadRequest) => {
  externalCommits = count;
  let answer: HoldingThreadAnswer;
  try {
    const listing = await holdingListing(reads, request);
    // Its own ArrayBuffer (a Buffer may share a pooled one), moved to the event loop, not copied.
    const bytes = new Uint8Array(listing.body).buffer;
    answer = { id, bytes, assetIds: listing.assetIds, wallets: listing.wallets };
    port.postMessage(answer, [bytes]);
    return;
  } catch (error) {
    answer =
      error instanceof AppError
        ? { id, problem: problemFields(error) }
        : { id, failure: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(answer);
});

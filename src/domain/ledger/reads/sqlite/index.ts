// The SQLite Reads adapter (../port.ts). Reads run on read-only connections of their own on the file
// (../../../../db/read-statements.ts; WAL: the last committed state, never waiting for the writer).
// A listing asked as the API answers it runs on the adapter's thread (./thread.ts, ./worker.ts): the
// statement, the views and the JSON of a listing answered from the database take most of its cost,
// and the driver runs them synchronously; on the thread they use the second core. The listings the
// domain asks for run on the event loop over the same code (../holdings.ts). Each keeps its own
// fixed-view cache (../fixed-views.ts). The thread stops when the database closes.

import type { Database } from '../../../../db/database.ts';
import { databaseFile } from '../../../../db/dialect.ts';
import { listingReads } from '../holdings.ts';
import type { HoldingReads, Reads } from '../port.ts';
import { assetById, assetOwners } from '../queries.ts';
import { zeroBalanceOf } from '../zero.ts';
import { type HoldingThread, holdingThread } from './thread.ts';

export function createSqliteReads(database: Database, viewsKept?: number): Reads {
  const { orm, reads: statements, commitCounter } = database;
  const zero = zeroBalanceOf(orm);
  const path = databaseFile(orm);
  if (path === undefined) throw new Error('the SQLite reads need a database file');
  // commitCounter: the database's one counter of commits by other processes (read at most once a millisecond).
  let local: Promise<HoldingReads> | undefined;
  /** The listings on the event loop. */
  const reads = () =>
    (local ??= commitCounter().then((commits) => listingReads(statements, zero, commits, { viewsKept })));
  let thread: Promise<HoldingThread> | undefined;
  /** The listings' thread, stopped when the database closes. */
  const listingThread = () =>
    (thread ??= commitCounter().then((commits) => {
      const started = holdingThread({ path, zero, viewsKept }, commits);
      database.onClose(() => void started.close());
      return started;
    }));

  return {
    asset: (id) => assetById(statements, id),
    assetOwners: (assetId, options) => assetOwners(statements, zero, assetId, options),
    walletAssets: async (wallet, filters) => (await reads()).walletAssets(wallet, filters),
    userAssets: async (userId, filters) => (await reads()).userAssets(userId, filters),
    userWallets: async (userId) => (await reads()).userWallets(userId),
    listing: async (request) => (await listingThread()).list(request),
  };
}

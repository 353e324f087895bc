// Read side of the ledger: what a wallet holds, who holds an asset, everything in a user's wallets.
// The holdings listings themselves are holding-reads.ts; here they are wired to the database: on the
// event loop for the domain's callers, and as JSON answers for the API (`listing`), on SQLite from the
// listings' thread (holding-thread.ts). Who holds an asset (assetOwners) reads through the ORM.
import { databaseFile } from '../../db/dialect.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { Holding } from '../../db/entities/Holding.ts';
import { type Orm, onDatabaseClose } from '../../db/orm.ts';
import { readStatements } from '../../db/read-statements.ts';
import { Uint256Type } from '../../db/types/uint256.ts';
import { externalCommitCounter } from '../../db/write-statements.ts';
import { formatAddress } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { decodeCursor, isString, type Page, page } from './cursor.ts';
import {
  createHoldingReads,
  type HoldingListing,
  type HoldingReads,
  holdingListing,
  type ListingRequest,
} from './holding-reads.ts';
import { type HoldingThread, holdingThread } from './holding-thread.ts';
import { decimalsOf } from './views.ts';

export type { HoldingFilters, HoldingListing, ListingRequest } from './holding-reads.ts';

export interface AssetOwnersPage extends Page<{ wallet: string; balance: string }> {
  assetId: string;
}

export interface HoldingLists extends HoldingReads {
  assetOwners(assetId: string, options: { limit: number; cursor?: string }): Promise<AssetOwnersPage>;
  /**
   * A listing as the API answers it (its JSON and what it shows): on SQLite computed on the listings'
   * thread, on PostgreSQL here.
   */
  listing(request: ListingRequest): Promise<HoldingListing>;
}

export function createHoldingLists(orm: Orm): HoldingLists {
  const statements = readStatements(orm);
  // A zero balance as the column stores it (zero-padded text on SQLite).
  const zero = new Uint256Type().convertToDatabaseValue(0n, orm.em.getPlatform());
  // SQLite: a file the listings' thread opens too.
  const sqlitePath = databaseFile(orm);
  // The database's one counter of commits by other processes (read at most once a millisecond).
  const commitCounter = () => externalCommitCounter(orm);
  let local: Promise<HoldingReads> | undefined;
  /** The listings on the event loop. */
  const reads = () =>
    (local ??= commitCounter().then((commits) => createHoldingReads(statements, zero, commits)));
  let thread: Promise<HoldingThread> | undefined;
  /** The listings' thread (SQLite), stopped when the database closes. */
  const listingThread = (path: string) =>
    (thread ??= commitCounter().then((commits) => {
      const started = holdingThread({ path, zero }, commits);
      onDatabaseClose(orm, () => void started.close());
      return started;
    }));

  return {
    walletAssets: async (wallet, filters) => (await reads()).walletAssets(wallet, filters),
    userAssets: async (userId, filters) => (await reads()).userAssets(userId, filters),
    userWallets: async (userId) => (await reads()).userWallets(userId),

    async listing(request) {
      if (sqlitePath !== undefined) return (await listingThread(sqlitePath)).list(request);
      return holdingListing(await reads(), request);
    },

    async assetOwners(assetId, { limit, cursor }) {
      const after = decodeCursor(cursor, 'asset-owners', isString);
      const em = orm.em.fork();
      const asset = await em.findOne(Asset, { id: assetId });
      if (!asset) throw assetNotFound(assetId);
      const rows = await em.find(
        Holding,
        { asset: assetId, balance: { $gt: 0n }, ...(after === undefined ? {} : { wallet: { $gt: after } }) },
        { orderBy: { wallet: 'asc' }, limit: limit + 1 },
      );
      const result = page(rows, limit, 'asset-owners', (row) => row.wallet);
      const decimals = decimalsOf(asset);
      return {
        assetId,
        data: result.data.map((row) => ({
          wallet: formatAddress(row.wallet),
          balance: formatAmount(row.balance as bigint, decimals),
        })),
        next_cursor: result.next_cursor,
      };
    },
  };
}

// What both Reads adapters (./port.ts) run besides the listings (./holdings.ts): the SQL text of each
// read, the typed answer it makes, and the change keys of each read's answer, next to the query that
// produces it (the read cache tags an answer with them: src/http/read-cache.ts; what a committed
// change touches, the other side of the same keys: src/events/change-keys.ts).
// Statements are written once with `?` placeholders (../../../db/read-statements.ts). Nothing here
// needs the ORM: the SQLite adapter runs the listings on a thread that loads the driver
// (better-sqlite3) alone (test/unit/ledger/holding-thread-modules.test.ts).
import type { ReadStatements } from '../../../db/sqlite-read-statements.ts';
import { assetKey, holdersKey, userKey, walletKey } from '../../../events/change-keys.ts';
import { NotFoundError } from '../../errors.ts';
import { formatAddress, type StoredAddress } from '../addresses.ts';
import { formatUnits } from '../amounts.ts';
import { ASSET_COLUMNS, type AssetRow, assetFieldsOf } from '../asset-rows.ts';
import { decodeCursor, isString, page } from '../cursor.ts';
import { type AssetView, assetView } from '../views.ts';
import type { AssetOwnersPage, HoldingListing, HoldingReads, ListingRequest } from './port.ts';

export function assetNotFound(id: string): NotFoundError {
  return new NotFoundError(`No asset with id ${id}.`);
}

// An asset by id (GET /assets/{id}): one statement, the view built from the row (no entity).

const ASSET_SQL = `select ${ASSET_COLUMNS} from asset a where a.id = ?`;

export async function assetById(statements: ReadStatements, id: string): Promise<AssetView> {
  const [row] = await statements.all<AssetRow>(ASSET_SQL, [id]);
  if (!row) throw assetNotFound(id);
  return assetView(assetFieldsOf(row, statements));
}

/** What an asset's answer shows: its fields, and an NFT's `owner` (changed by every transfer of it). */
export function assetChangeKeys(asset: Pick<AssetView, 'id' | 'kind'>): string[] {
  return asset.kind === 'nft' ? [assetKey(asset.id), holdersKey(asset.id)] : [assetKey(asset.id)];
}

// Who holds an asset (GET /assets/{id}/owners), by wallet.

const OWNERS_ASSET_SQL = 'select a.kind, a.decimals from asset a where a.id = ?';
const ownersSql = (after: boolean) =>
  'select h.wallet, h.balance from holding h where h.asset_id = ? and h.balance > ?' +
  `${after ? ' and h.wallet > ?' : ''} order by h.wallet limit ?`;
const OWNERS_SQL = ownersSql(false);
const OWNERS_AFTER_SQL = ownersSql(true);

export async function assetOwners(
  statements: ReadStatements,
  zero: unknown,
  assetId: string,
  { limit, cursor }: { limit: number; cursor?: string },
): Promise<AssetOwnersPage> {
  const after = decodeCursor(cursor, 'asset-owners', isString);
  const [asset] = await statements.arrays(OWNERS_ASSET_SQL, [assetId]);
  if (!asset) throw assetNotFound(assetId);
  const [kind, decimalsValue] = asset;
  const decimals = kind === 'nft' || decimalsValue == null ? 0 : Number(decimalsValue);
  const rows = await (after === undefined
    ? statements.arrays(OWNERS_SQL, [assetId, zero, limit + 1])
    : statements.arrays(OWNERS_AFTER_SQL, [assetId, zero, after, limit + 1]));
  const owners = rows.map(([wallet, balance]) => ({ wallet: String(wallet), balance: String(balance) }));
  const result = page(owners, limit, 'asset-owners', (row) => row.wallet);
  return {
    assetId,
    data: result.data.map((row) => ({
      wallet: formatAddress(row.wallet),
      balance: formatUnits(row.balance, decimals),
    })),
    next_cursor: result.next_cursor,
  };
}

export function assetOwnersChangeKeys(assetId: string): string[] {
  return [holdersKey(assetId)];
}

// The holdings listings (GET /wallets/{id}/assets, GET /me/assets: ./holdings.ts).

const USER_WALLETS_SQL = 'select address from wallet where user_id = ?';

/** The lowercase addresses of every wallet the user controls. */
export async function userWallets(statements: ReadStatements, userId: string): Promise<StoredAddress[]> {
  const rows = await statements.arrays(USER_WALLETS_SQL, [userId]);
  return rows.map(([address]) => String(address) as StoredAddress);
}

/**
 * What a listing's answer shows: a wallet's listing, the wallet (an NFT's owner is the listed wallet:
 * `w:` covers it) and each listed asset; a user's, the user's wallets (every one, holding or not: a
 * transfer into any of them changes the answer) and each listed asset.
 */
export function listingChangeKeys(
  request: ListingRequest,
  assetIds: readonly string[],
  wallets: readonly StoredAddress[],
): string[] {
  const owner =
    request.op === 'walletAssets'
      ? [walletKey(request.wallet)]
      : [userKey(request.userId), ...wallets.map(walletKey)];
  return [...owner, ...assetIds.map(assetKey)];
}

/** The JSON answer of a listing (the page the contract declares, serialized) and what it shows. */
export async function holdingListing(reads: HoldingReads, request: ListingRequest): Promise<HoldingListing> {
  const [listed, wallets] =
    request.op === 'walletAssets'
      ? [await reads.walletAssets(request.wallet, request.filters), []]
      : await Promise.all([
          reads.userAssets(request.userId, request.filters),
          reads.userWallets(request.userId),
        ]);
  const assetIds = listed.data.map((holding) => holding.asset.id);
  return {
    body: Buffer.from(JSON.stringify(listed), 'utf8'),
    assetIds,
    wallets,
    keys: listingChangeKeys(request, assetIds, wallets),
  };
}

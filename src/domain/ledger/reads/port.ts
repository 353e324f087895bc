// The hot read path behind one port: an asset by id, who holds an asset, what a wallet holds,
// everything in a user's wallets, and a listing as the API answers it (its JSON and the change keys
// of what it shows). One adapter per database (./sqlite/, ./postgres.ts; what both run: an asset, its
// owners and the change keys of every answer in ./queries.ts, the listings and their fixed-view cache
// in ./holdings.ts and ./fixed-views.ts, one cache per adapter), held to the same answers by
// test/conformance/reads.test.ts: the shape of the ledger's LedgerStore and the webhooks'
// DeliveryStore. The handlers and the read cache see this port only; the SQLite adapter's thread is
// its own (dependency rules, .dependency-cruiser.cjs `reads-adapters-private` and
// `edge-reads-through-port`, keep them so).
// Holdings are public ledger data (like a chain explorer). Zero rows are kept by the write side and
// filtered out here. Pages are keyed on immutable values: asset id, wallet address.
import type { StoredAddress } from '../addresses.ts';
import type { Page } from '../cursor.ts';
import type { AssetView } from '../views.ts';

export interface HoldingFilters {
  kind?: 'nft' | 'fungible';
  collection?: string;
  limit: number;
  cursor?: string;
}

/** Issue 36: the timed part of a currency holding, by end time (absent when none). */
export type Expiring = { expiring?: { amount: string; expiresAt: string }[] };

export interface WalletAssetsPage extends Page<{ asset: AssetView; balance: string } & Expiring> {
  wallet: string;
}

export type UserAssetsPage = Page<{ wallet: string; asset: AssetView; balance: string } & Expiring>;

export interface AssetOwnersPage extends Page<{ wallet: string; balance: string }> {
  assetId: string;
}

/** A holdings listing asked as a JSON answer (`Reads.listing`). */
export type ListingRequest =
  | { op: 'walletAssets'; wallet: StoredAddress; filters: HoldingFilters }
  | { op: 'userAssets'; userId: string; filters: HoldingFilters };

/** A listing's answer: its JSON (UTF-8, what goes on the wire) and what it shows. */
export interface HoldingListing {
  body: Buffer;
  /** The ids of the assets it lists. */
  assetIds: string[];
  /** userAssets: every wallet the user controls, holding or not (a transfer into one changes it). */
  wallets: StoredAddress[];
  /** The change keys of what it shows (./queries.ts, listingChangeKeys): the read cache's tags. */
  keys: string[];
}

/** The holdings listings on the event loop. */
export interface HoldingReads {
  walletAssets(wallet: StoredAddress, filters: HoldingFilters): Promise<WalletAssetsPage>;
  userAssets(userId: string, filters: HoldingFilters): Promise<UserAssetsPage>;
  /** The lowercase addresses of every wallet the user controls (custodial and linked). */
  userWallets(userId: string): Promise<StoredAddress[]>;
}

export interface Reads extends HoldingReads {
  /** The asset's view (404 if there is none). Its change keys: ./queries.ts, assetChangeKeys. */
  asset(id: string): Promise<AssetView>;
  /** Who holds the asset, by wallet (404 if there is no such asset). Change keys: assetOwnersChangeKeys. */
  assetOwners(assetId: string, options: { limit: number; cursor?: string }): Promise<AssetOwnersPage>;
  /**
   * A listing as the API answers it (its JSON, what it shows, its change keys): on SQLite computed on
   * the adapter's thread, on PostgreSQL on the event loop.
   */
  listing(request: ListingRequest): Promise<HoldingListing>;
}

// Marketplace listings as rows and as published (issue 35), and the one rule that keeps them honest
// when their item changes hands outside the marketplace: a move, burn or freeze of a listed NFT ends
// its active listings IN THE SAME PLAN (a `listingEnded` event each). A listing that still slips
// through (a currency listing whose seller spent the amount, a listing committed while its NFT was
// moving) is found at its purchase: the plan's guards refuse it, and the purchase ends it then.

import type { Listing, ListingEndReason, ListingStatus } from '../../db/entities/Listing.ts';
import type { ReadStatements } from '../../db/read-statements.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import { type AssetRow, amountOf } from './asset-rows.ts';
import type { ListingStatusChange, NewEvent, NewListing } from './store/plan.ts';
import type { ListingView } from './views.ts';

/** A listing row as the marketplace reads it. */
export interface ListingRow extends Omit<NewListing, 'metadata'> {
  status: ListingStatus;
  endReason: ListingEndReason | null;
  updatedAt: Date;
  operationId: string | null;
  closedBy: string | null;
}

export const LISTING_COLUMNS =
  'id, status, end_reason, seller_user_id, seller_wallet, asset_id, collection_id, amount, currency_id, price, ' +
  'expires_at, created_at, updated_at, operation_id, closed_by';

/** A row of LISTING_COLUMNS as both databases return it (amounts as digits, dates through `date`). */
export interface StoredListingRow {
  id: string;
  status: ListingStatus;
  end_reason: ListingEndReason | null;
  seller_user_id: string;
  seller_wallet: string;
  asset_id: string;
  collection_id: string;
  amount: unknown;
  currency_id: string;
  price: unknown;
  expires_at: unknown;
  created_at: unknown;
  updated_at: unknown;
  operation_id: string | null;
  closed_by: string | null;
}

export function listingRowOf(row: StoredListingRow, reads: ReadStatements): ListingRow {
  return {
    id: String(row.id),
    status: row.status,
    endReason: row.end_reason ?? null,
    sellerUserId: String(row.seller_user_id),
    sellerWallet: String(row.seller_wallet) as StoredAddress,
    assetId: String(row.asset_id),
    collectionId: String(row.collection_id),
    amount: amountOf(row.amount),
    currencyId: String(row.currency_id),
    price: amountOf(row.price),
    expiresAt: row.expires_at == null ? null : reads.date(row.expires_at),
    createdAt: reads.date(row.created_at),
    updatedAt: reads.date(row.updated_at),
    operationId: row.operation_id ?? null,
    closedBy: row.closed_by ?? null,
  };
}

/** A listing row from its entity. */
export function listingRowOfEntity(listing: Listing): ListingRow {
  return {
    id: listing.id,
    status: listing.status,
    endReason: listing.endReason ?? null,
    sellerUserId: listing.sellerUserId,
    sellerWallet: listing.sellerWallet as StoredAddress,
    assetId: listing.assetId,
    collectionId: listing.collectionId,
    amount: listing.amount as bigint,
    currencyId: listing.currencyId,
    price: listing.price as bigint,
    expiresAt: listing.expiresAt ?? null,
    createdAt: listing.createdAt,
    updatedAt: listing.updatedAt,
    operationId: listing.operationId ?? null,
    closedBy: listing.closedBy ?? null,
  };
}

/** Decimals of the listed asset and of the price's currency, for the published amounts. */
export interface ListingDecimals {
  asset: number;
  currency: number;
}

/** Active and past its expiry reads as `expired`. */
export function listingStatusOf(listing: Pick<ListingRow, 'status' | 'expiresAt'>, now: Date) {
  return listing.status === 'active' && listing.expiresAt !== null && listing.expiresAt <= now
    ? 'expired'
    : listing.status;
}

export function listingView(listing: ListingRow, decimals: ListingDecimals, now = new Date()): ListingView {
  return {
    id: listing.id,
    status: listingStatusOf(listing, now),
    endReason: listing.endReason,
    seller: formatAddress(listing.sellerWallet),
    assetId: listing.assetId,
    collection: listing.collectionId,
    amount: formatAmount(listing.amount, decimals.asset),
    currency: listing.currencyId,
    price: formatAmount(listing.price, decimals.currency),
    expiresAt: listing.expiresAt?.toISOString() ?? null,
    createdAt: listing.createdAt.toISOString(),
    updatedAt: listing.updatedAt.toISOString(),
    operationId: listing.operationId,
  };
}

/** A listing's event (`listingCreated`, `listingEnded`): concerns its seller's wallet (as `from`). */
export function listingEvent(type: 'listingCreated' | 'listingEnded', view: ListingView, at: Date): NewEvent {
  const seller = view.seller.toLowerCase();
  return {
    type,
    occurredAt: at,
    data: view,
    assetId: view.assetId,
    collectionId: view.collection,
    wallets: [seller],
    fromWallet: seller,
    toWallet: null,
  };
}

/** The listing closed without a sale: its status change and its `listingEnded` event. */
export function closedListing(
  listing: ListingRow,
  decimals: ListingDecimals,
  change: Omit<ListingStatusChange, 'listingId' | 'operationId'>,
): { change: ListingStatusChange; event: NewEvent; view: ListingView } {
  const closed: ListingRow = {
    ...listing,
    status: change.status,
    endReason: change.reason,
    closedBy: change.by,
    updatedAt: change.at,
  };
  const view = listingView(closed, decimals, change.at);
  return {
    change: { ...change, listingId: listing.id, operationId: null },
    // Announced only if the plan's status change closes it (one closed meanwhile stays as it closed).
    event: { ...listingEvent('listingEnded', view, change.at), onlyIfListingClosed: listing.id },
    view,
  };
}

const ACTIVE_OF_ASSET = `select ${LISTING_COLUMNS} from listing where asset_id = ? and status = 'active'`;

/**
 * The parts ending every active listing of the NFTs `assetIds` (a move, a burn, a freeze), except
 * those `except` names (the listing a purchase sells): one indexed read per NFT, `(asset_id, status)`.
 */
export async function endListingsOf(
  reads: ReadStatements,
  decimalsOf: (listing: ListingRow) => Promise<ListingDecimals>,
  ends: { assetId: string; reason: ListingEndReason }[],
  at: Date,
  except: ReadonlySet<string> = new Set(),
): Promise<{ listingStatuses: ListingStatusChange[]; events: NewEvent[] }> {
  const listingStatuses: ListingStatusChange[] = [];
  const events: NewEvent[] = [];
  for (const { assetId, reason } of ends) {
    for (const row of await reads.all<StoredListingRow>(ACTIVE_OF_ASSET, [assetId])) {
      const listing = listingRowOf(row, reads);
      if (except.has(listing.id)) continue;
      const closed = closedListing(listing, await decimalsOf(listing), {
        status: 'ended',
        reason,
        by: null,
        at,
      });
      listingStatuses.push(closed.change);
      events.push(closed.event);
    }
  }
  return { listingStatuses, events };
}

const ASSET_DECIMALS = 'select kind, decimals from asset where id = ?';

/** `ListingDecimals` read from the assets (for a service without the leg writer's cache). */
export function listingDecimalsFrom(reads: ReadStatements) {
  const decimals = async (assetId: string) => {
    const [row] = await reads.all<Pick<AssetRow, 'kind' | 'decimals'>>(ASSET_DECIMALS, [assetId]);
    return row?.kind === 'fungible' ? Number(row.decimals ?? 0) : 0;
  };
  return async (listing: ListingRow): Promise<ListingDecimals> => ({
    asset: await decimals(listing.assetId),
    currency: await decimals(listing.currencyId),
  });
}

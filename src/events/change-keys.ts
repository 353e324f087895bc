// What a committed change touched, as keys the read cache tags its answers with
// (src/http/read-cache.ts). One derivation, from what every change writes: its outbox event (or, for a
// change that publishes none, its internal ledger_change row). The instance that committed the change
// applies it before answering; every instance applies it again when its relay reads the rows.
//
//   w:<wallet>  what the wallet holds (a balance, an asset in or out)
//   h:<asset>   who holds the asset (its owners' listing; an NFT's `owner`)
//   a:<asset>   the asset's own fields other than its owner (a currency's totalSupply, metadata,
//               frozen: `assetUpdated`)
//   u:<user>    which wallets the user controls
//
// A transfer of a fungible asset touches two wallets and its holders, not the asset: the listings of
// the other 298 wallets holding it stay cached. A mint (from the zero address) or a burn (to it) also
// changes the asset's totalSupply. A price is in no cached answer.

import type { LedgerChangeKind } from '../db/entities/LedgerChange.ts';
import type { EventType } from '../db/entities/OutboxEvent.ts';

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

export const walletKey = (address: string) => `w:${address.toLowerCase()}`;
export const holdersKey = (assetId: string) => `h:${assetId}`;
export const assetKey = (assetId: string) => `a:${assetId}`;
export const userKey = (userId: string) => `u:${userId}`;

/** What keys need of an event: its type, asset and wallets (`from`, `to` of a transfer; a new NFT's owner). */
export interface ChangedEvent {
  type: EventType;
  assetId: string;
  wallets: readonly string[];
}

/** What keys need of an internal change (a ledger_change row). */
export interface ChangedLink {
  kind: LedgerChangeKind;
  userId: string | null;
  wallet: string | null;
}

export type Change = ChangedEvent | ChangedLink;

export function addKeysOf(change: Change, keys: Set<string>): void {
  if ('kind' in change) {
    // walletLinked: the user's listing now covers the wallet.
    if (change.userId) keys.add(userKey(change.userId));
    if (change.wallet) keys.add(walletKey(change.wallet));
    return;
  }
  switch (change.type) {
    case 'newTransfer': {
      for (const wallet of change.wallets) if (wallet !== ZERO_ADDRESS) keys.add(walletKey(wallet));
      keys.add(holdersKey(change.assetId));
      // A mint (from) or a burn (to the zero address) changes the asset's totalSupply.
      if (change.wallets.includes(ZERO_ADDRESS)) keys.add(assetKey(change.assetId));
      return;
    }
    case 'newNFT': {
      for (const wallet of change.wallets) keys.add(walletKey(wallet));
      keys.add(holdersKey(change.assetId));
      keys.add(assetKey(change.assetId));
      return;
    }
    case 'assetUpdated': {
      // The asset's own fields (metadata, frozen): its reads, and the listings that show it (a
      // holdings listing is tagged with the `a:` key of every asset it lists).
      keys.add(assetKey(change.assetId));
      return;
    }
    case 'priceUpdate':
      return;
    // Advisory (no ledger row changed: the ledger moves with the `newTransfer`), or market and store
    // rows no cached read shows: a sale's, a purchase's, an opened loot box's and an expired item's
    // moves are their own newTransfer and newNFT events.
    case 'chainTransferPending':
    case 'chainTransferRemoved':
    case 'listingCreated':
    case 'listingEnded':
    case 'sale':
    case 'offerCreated':
    case 'offerEnded':
    case 'storePurchase':
    case 'lootBoxOpened':
    case 'auctionCreated':
    case 'auctionBid':
    case 'auctionEnded':
    case 'itemExpired':
      return;
  }
}

export function keysOf(changes: Iterable<Change>): Set<string> {
  const keys = new Set<string>();
  for (const change of changes) addKeysOf(change, keys);
  return keys;
}

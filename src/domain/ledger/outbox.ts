// The transactional outbox (DESIGN.md §5): every mint, transfer, NFT and price change carries its
// event row in its plan, so the store writes it in the same transaction as the change and an event
// exists exactly when its change committed; a change that publishes no event but changes cached reads
// (a wallet link) carries an internal ledger_change row instead. These builders make those rows; the
// stores (./store/) are the only writers of both tables, and report every row they committed to the
// commit hook (src/events/commit-hook.ts), which invalidates the cached reads it touched and
// announces the commit.
import type { NewEvent, NewLedgerChange } from './store/plan.ts';
import type { AssetView, PriceView, TransferView } from './views.ts';

/** `walletLinked` (internal, never published): `wallet` now belongs to `userId`. */
export function walletLinkedChange(userId: string, wallet: string, occurredAt: Date): NewLedgerChange {
  return { kind: 'walletLinked', occurredAt, userId, wallet: wallet.toLowerCase() };
}

/**
 * `newNFT`: the NFT's first owner is its `to` wallet, as for a mint. An on-chain token first seen
 * burned (its mint before the indexed history, its first movement a burn) has none: no wallet.
 */
export function newNftEvent(asset: AssetView, occurredAt: Date): NewEvent {
  const owner = asset.owner ? asset.owner.toLowerCase() : null;
  return {
    type: 'newNFT',
    occurredAt,
    data: { ...asset },
    assetId: asset.id,
    collectionId: asset.collection,
    wallets: owner ? [owner] : [],
    fromWallet: null,
    toWallet: owner,
  };
}

/**
 * `assetUpdated` (metadata updated, frozen, unfrozen): concerns the NFT's owner (as `to`, so a wallet
 * filter finds it as it finds a `newNFT`); a currency's or a burned NFT's, no wallet.
 */
export function assetUpdatedEvent(asset: AssetView, occurredAt: Date): NewEvent {
  const owner = asset.owner ? asset.owner.toLowerCase() : null;
  return {
    type: 'assetUpdated',
    occurredAt,
    data: { ...asset },
    assetId: asset.id,
    collectionId: asset.collection,
    wallets: owner ? [owner] : [],
    fromWallet: null,
    toWallet: owner,
  };
}

/** The `newTransfer` row of `transfer`, for transfers and currency mints (`from` the zero address). */
export function newTransferEvent(
  transfer: TransferView,
  collectionId: string,
  occurredAt: Date,
): NewEvent & { type: 'newTransfer'; fromWallet: string; toWallet: string } {
  const from = transfer.from.toLowerCase();
  const to = transfer.to.toLowerCase();
  return {
    type: 'newTransfer',
    occurredAt,
    data: { ...transfer },
    assetId: transfer.assetId,
    collectionId,
    wallets: [from, to],
    fromWallet: from,
    toWallet: to,
  };
}

/** `priceUpdate`: concerns an asset, no wallet. */
export function newPriceEvent(price: PriceView, collectionId: string, occurredAt: Date): NewEvent {
  return {
    type: 'priceUpdate',
    occurredAt,
    data: { ...price },
    assetId: price.assetId,
    collectionId,
    wallets: [],
    fromWallet: null,
    toWallet: null,
  };
}

// The transactional outbox (DESIGN.md §5): every mint, transfer and price change adds its event row
// in the same transaction as the change, so an event exists exactly when its change committed.
import type { EntityManager } from '@mikro-orm/sql';
import { OutboxEvent } from '../../db/entities/OutboxEvent.ts';
import { holdOutboxWriterLock } from '../../events/outbox-lock.ts';
import type { AssetView, PriceView, TransferView } from './views.ts';

async function append(em: EntityManager, event: Omit<OutboxEvent, 'id'>): Promise<void> {
  // Ids must become visible in commit order for readers that resume "after id N": see outbox-lock.ts.
  await holdOutboxWriterLock(em);
  await em.insert(OutboxEvent, event);
}

/** `newNFT`: the NFT's first owner is its `to` wallet, as for a mint. */
export function recordNewNft(em: EntityManager, asset: AssetView, occurredAt: Date): Promise<void> {
  const owner = (asset.owner as string).toLowerCase();
  return append(em, {
    type: 'newNFT',
    occurredAt,
    data: { ...asset },
    assetId: asset.id,
    collectionId: asset.collection,
    wallets: [owner],
    fromWallet: null,
    toWallet: owner,
  });
}

/** `newTransfer`, for transfers and currency mints (whose `from` is the zero address). */
export function recordNewTransfer(
  em: EntityManager,
  transfer: TransferView,
  collectionId: string,
  occurredAt: Date,
): Promise<void> {
  const from = transfer.from.toLowerCase();
  const to = transfer.to.toLowerCase();
  return append(em, {
    type: 'newTransfer',
    occurredAt,
    data: { ...transfer },
    assetId: transfer.assetId,
    collectionId,
    wallets: [from, to],
    fromWallet: from,
    toWallet: to,
  });
}

/** `priceUpdate`: concerns an asset, no wallet. */
export function recordPriceUpdate(
  em: EntityManager,
  price: PriceView,
  collectionId: string,
  occurredAt: Date,
): Promise<void> {
  return append(em, {
    type: 'priceUpdate',
    occurredAt,
    data: { ...price },
    assetId: price.assetId,
    collectionId,
    wallets: [],
    fromWallet: null,
    toWallet: null,
  });
}

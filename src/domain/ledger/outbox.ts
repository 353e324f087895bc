// The transactional outbox (DESIGN.md §5): every mint, transfer and price change adds its event row
// in the same transaction as the change, so an event exists exactly when its change committed; a
// change that publishes no event but changes cached reads (a wallet link) adds an internal
// ledger_change row instead. These are the only writers of both tables. Each row written is also
// noted for the transaction's commit hook (src/events/commit-hook.ts), which invalidates the cached
// reads it touched and announces the commit once the transaction has committed.

import type { EntityManager } from '@mikro-orm/sql';
import { LedgerChange } from '../../db/entities/LedgerChange.ts';
import { OutboxEvent } from '../../db/entities/OutboxEvent.ts';
import type { Change } from '../../events/change-keys.ts';
import { holdOutboxWriterLock } from '../../events/outbox-lock.ts';
import type { NewEvent } from './store/plan.ts';
import type { AssetView, PriceView, TransferView } from './views.ts';

/** The changes written so far by each open ledger transaction (./transactions.ts opens them). */
const written = new WeakMap<EntityManager, Change[]>();

/** Notes the changes `em`'s transaction writes into `changes` (by the ledger's transaction runner). */
export function noteChangesOf(em: EntityManager, changes: Change[]): void {
  written.set(em, changes);
}

function noted(em: EntityManager): Change[] {
  const changes = written.get(em);
  if (!changes) throw new Error('ledger changes are written inside inTransaction (./transactions.ts)');
  return changes;
}

async function append(em: EntityManager, event: Omit<OutboxEvent, 'id'>): Promise<void> {
  const changes = noted(em);
  // Ids must become visible in commit order for readers that resume "after id N": see outbox-lock.ts.
  await holdOutboxWriterLock(em);
  await em.insert(OutboxEvent, event);
  changes.push(event);
}

/** `walletLinked` (internal, never published): `wallet` now belongs to `userId`. */
export async function recordWalletLinked(
  em: EntityManager,
  userId: string,
  wallet: string,
  occurredAt: Date,
): Promise<void> {
  const changes = noted(em);
  const change = { kind: 'walletLinked' as const, occurredAt, userId, wallet: wallet.toLowerCase() };
  // The same lock as events: the relay settles gaps in these ids the same way.
  await holdOutboxWriterLock(em);
  await em.insert(LedgerChange, change);
  changes.push(change);
}

/** `newNFT`: the NFT's first owner is its `to` wallet, as for a mint. */
export function newNftEvent(asset: AssetView, occurredAt: Date): NewEvent {
  const owner = (asset.owner as string).toLowerCase();
  return {
    type: 'newNFT',
    occurredAt,
    data: { ...asset },
    assetId: asset.id,
    collectionId: asset.collection,
    wallets: [owner],
    fromWallet: null,
    toWallet: owner,
  };
}

/** The `newTransfer` row of `transfer`, for transfers and currency mints (`from` the zero address). */
export function newTransferEvent(
  transfer: TransferView,
  collectionId: string,
  occurredAt: Date,
): Omit<OutboxEvent, 'id'> & { type: 'newTransfer'; fromWallet: string; toWallet: string } {
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

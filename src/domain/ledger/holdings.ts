// Balance mechanics shared by transfers and mints. Holdings are read for update (a row lock on
// PostgreSQL; SQLite runs one writer at a time) in address order, so two transfers between the same
// wallets in opposite directions cannot deadlock. A holding that drops to zero stays as a zero row:
// deleting and re-creating rows under concurrency is harder to get right than filtering zeros out.
import type { EntityManager } from '@mikro-orm/sql';
import { Holding } from '../../db/entities/Holding.ts';
import type { StoredAddress } from './addresses.ts';
import { forUpdate } from './transactions.ts';

/** Makes sure a (wallet, asset) row exists, without overwriting one a concurrent writer created. */
async function ensureHolding(
  em: EntityManager,
  wallet: StoredAddress,
  assetId: string,
  now: Date,
): Promise<void> {
  await em
    .createQueryBuilder(Holding)
    .insert({ wallet, asset: assetId, balance: 0n, updatedAt: now })
    .onConflict(['wallet', 'asset'])
    .ignore()
    .execute();
}

/**
 * Locks the holdings of `wallets` for `assetId` in address order and returns them by address.
 * `create` lists the wallets whose row is created first when missing (receivers); a sender without a
 * row is simply absent from the result. One locking read covers the rows that exist (PostgreSQL
 * locks them in the sort order); a missing receiver row is then created and locked.
 */
export async function lockHoldings(
  em: EntityManager,
  assetId: string,
  wallets: StoredAddress[],
  create: StoredAddress[],
): Promise<Map<StoredAddress, Holding>> {
  const lock = async (addresses: StoredAddress[]) => {
    const rows = await em.find(
      Holding,
      { wallet: { $in: addresses }, asset: assetId },
      { ...forUpdate(em), orderBy: { wallet: 'asc' }, refresh: true },
    );
    for (const row of rows) locked.set(row.wallet as StoredAddress, row);
  };
  const locked = new Map<StoredAddress, Holding>();
  await lock([...new Set(wallets)].sort());
  const missing = create.filter((wallet) => !locked.has(wallet));
  if (missing.length > 0) {
    const now = new Date();
    for (const wallet of missing) await ensureHolding(em, wallet, assetId, now);
    await lock(missing);
  }
  return locked;
}

/** Adds `amount` to a locked holding. */
export function credit(holding: Holding, amount: bigint, now: Date): void {
  holding.balance = (holding.balance as bigint) + amount;
  holding.updatedAt = now;
}

/** Takes `amount` from a locked holding; the caller has checked the balance covers it. */
export function debit(holding: Holding, amount: bigint, now: Date): void {
  const balance = holding.balance as bigint;
  if (balance < amount) throw new Error('debit past zero: the caller must check the balance first');
  holding.balance = balance - amount;
  holding.updatedAt = now;
}

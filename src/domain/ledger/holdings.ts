// Balance mechanics shared by transfers and mints. Holdings are read for update (a row lock on
// PostgreSQL; SQLite runs one writer at a time) in address order, so two transfers between the same
// wallets in opposite directions cannot deadlock. A holding that drops to zero stays as a zero row:
// deleting and re-creating rows under concurrency is harder to get right than filtering zeros out.
// Raw statements (../../db/write-statements.ts): these run on every transfer.
import type { EntityManager } from '@mikro-orm/sql';
import type { Orm } from '../../db/orm.ts';
import { databaseKindOf } from '../../db/platform.ts';
import { Uint256Type } from '../../db/types/uint256.ts';
import { writeStatements } from '../../db/write-statements.ts';
import type { StoredAddress } from './addresses.ts';
import { amountOf } from './asset-rows.ts';

/** A holding row locked by the current transaction. */
export interface LockedHolding {
  wallet: StoredAddress;
  assetId: string;
  balance: bigint;
}

export interface Holdings {
  /**
   * Locks the holdings of `wallets` for `assetId` in address order and returns them by address.
   * `create` lists the wallets whose row is created first when missing (receivers); a sender without
   * a row is simply absent from the result. One locking read covers the rows that exist (PostgreSQL
   * locks them in the sort order); a missing receiver row is then created and locked.
   */
  lock(
    em: EntityManager,
    assetId: string,
    wallets: StoredAddress[],
    create: StoredAddress[],
  ): Promise<Map<StoredAddress, LockedHolding>>;
  /** Adds `amount` to a locked holding. */
  credit(em: EntityManager, holding: LockedHolding, amount: bigint, now: Date): Promise<void>;
  /** Takes `amount` from a locked holding; the caller has checked the balance covers it. */
  debit(em: EntityManager, holding: LockedHolding, amount: bigint, now: Date): Promise<void>;
}

export function createHoldings(orm: Orm): Holdings {
  const statements = writeStatements(orm);
  const platform = orm.em.getPlatform();
  const amounts = new Uint256Type();
  const stored = (amount: bigint) => amounts.convertToDatabaseValue(amount, platform);
  const forUpdate = databaseKindOf(platform) === 'postgresql' ? ' for update' : '';

  async function lockRows(
    em: EntityManager,
    assetId: string,
    addresses: StoredAddress[],
    into: Map<StoredAddress, LockedHolding>,
  ): Promise<void> {
    const rows = await statements.all(
      em,
      `select wallet, balance from holding where asset_id = ? and wallet in (${addresses.map(() => '?').join(', ')}) order by wallet${forUpdate}`,
      [assetId, ...addresses],
    );
    for (const row of rows) {
      const wallet = row.wallet as StoredAddress;
      into.set(wallet, { wallet, assetId, balance: amountOf(row.balance) });
    }
  }

  async function write(em: EntityManager, holding: LockedHolding, balance: bigint, now: Date) {
    await statements.run(
      em,
      'update holding set balance = ?, updated_at = ? where wallet = ? and asset_id = ?',
      [stored(balance), now, holding.wallet, holding.assetId],
    );
    holding.balance = balance;
  }

  return {
    async lock(em, assetId, wallets, create) {
      const locked = new Map<StoredAddress, LockedHolding>();
      await lockRows(em, assetId, [...new Set(wallets)].sort(), locked);
      const missing = create.filter((wallet) => !locked.has(wallet));
      if (missing.length > 0) {
        const now = new Date();
        // Without overwriting a row a concurrent writer created meanwhile.
        for (const wallet of missing) {
          await statements.run(
            em,
            'insert into holding (wallet, asset_id, balance, updated_at) values (?, ?, ?, ?) on conflict (wallet, asset_id) do nothing',
            [wallet, assetId, stored(0n), now],
          );
        }
        await lockRows(em, assetId, missing, locked);
      }
      return locked;
    },

    credit: (em, holding, amount, now) => write(em, holding, holding.balance + amount, now),

    async debit(em, holding, amount, now) {
      if (holding.balance < amount)
        throw new Error('debit past zero: the caller must check the balance first');
      await write(em, holding, holding.balance - amount, now);
    },
  };
}

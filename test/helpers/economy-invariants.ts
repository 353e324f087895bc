// The economy's invariants beyond checkInvariants (./ledger-fixtures.ts), shared by the property tests
// of issue 21 (test/integration/economy/*-properties.test.ts): the event stream replays to the
// holdings, minted - burned == supply for every currency, and a burned NFT's burn is its last move.
import { expect } from 'vitest';
import { AssetSupply } from '../../src/db/entities/AssetSupply.ts';
import { Holding } from '../../src/db/entities/Holding.ts';
import { OutboxEvent } from '../../src/db/entities/OutboxEvent.ts';
import { Transfer } from '../../src/db/entities/Transfer.ts';
import type { Orm } from '../../src/db/orm.ts';
import { ZERO_ADDRESS } from '../../src/domain/ledger/addresses.ts';

/** Holdings as the outbox's events tell them, replayed from the first event (0-decimal currencies). */
export async function replayedHoldings(orm: Orm): Promise<Map<string, bigint>> {
  const events = await orm.em.fork().find(OutboxEvent, {}, { orderBy: { id: 'asc' } });
  const held = new Map<string, bigint>();
  const add = (assetId: string, wallet: string, delta: bigint) => {
    if (wallet === ZERO_ADDRESS) return;
    const key = `${assetId} ${wallet}`;
    const balance = (held.get(key) ?? 0n) + delta;
    if (balance === 0n) held.delete(key);
    else held.set(key, balance);
  };
  for (const event of events) {
    const data = event.data as Record<string, string>;
    if (event.type === 'newNFT') add(data.id, data.owner.toLowerCase(), 1n);
    if (event.type === 'newTransfer') {
      // Currencies here have 0 decimals, so an amount's text is its base units.
      add(data.assetId, data.from.toLowerCase(), -BigInt(data.amount));
      add(data.assetId, data.to.toLowerCase(), BigInt(data.amount));
    }
  }
  return held;
}

/** The holdings as stored (positive balances only). */
export async function storedHoldings(orm: Orm): Promise<Map<string, bigint>> {
  const rows = await orm.em.fork().find(Holding, { balance: { $gt: 0n } });
  return new Map(rows.map((row) => [`${row.asset.id} ${row.wallet}`, row.balance as bigint]));
}

/**
 * minted - burned == supply for each of `currencies`; every NFT's burn (if any) is its last move; the
 * event stream replays to the stored holdings.
 */
export async function expectLedgerHistoryHolds(orm: Orm, currencies: string[]): Promise<void> {
  const em = orm.em.fork();
  const sum = (rows: Transfer[]) => rows.reduce((total, row) => total + (row.amount as bigint), 0n);
  for (const id of currencies) {
    const currency = await em.findOneOrFail(AssetSupply, { asset: id });
    const minted = await em.find(Transfer, { asset: id, fromAddress: ZERO_ADDRESS });
    const burned = await em.find(Transfer, { asset: id, toAddress: ZERO_ADDRESS });
    expect(sum(minted) - sum(burned), `minted - burned of ${id}`).toBe(currency.totalSupply);
  }
  const moves = await em.find(Transfer, { asset: { kind: 'nft' } }, { orderBy: { seq: 'asc' } });
  const byNft = Map.groupBy(moves, (move) => move.asset.id);
  for (const [id, own] of byNft) {
    const burnAt = own.findIndex((move) => move.toAddress === ZERO_ADDRESS);
    if (burnAt >= 0) expect(burnAt, `the burn of ${id} is its last move`).toBe(own.length - 1);
  }
  expect(await replayedHoldings(orm)).toEqual(await storedHoldings(orm));
}

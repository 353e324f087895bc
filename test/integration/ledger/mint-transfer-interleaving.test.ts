// Mints and transfers of one currency at the same time (found by the crash test, `npm run chaos`): on
// PostgreSQL the mint locked the currency row FOR UPDATE, which blocks the foreign-key checks of the
// transfer, holding and price rows inserted meanwhile, so transfers and mints deadlocked, and the
// deadlock (a raw driver error) was answered as a 500 instead of being retried. Every one of these
// requests is valid and must succeed, quickly, with the invariants intact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/db/transactions.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

describe.each(DB_KINDS)('mints interleaved with transfers on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let players: TestUser[];

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    await fx.ledger.collections.create(studio, { id: 'mix', name: 'Mix' });
    await fx.ledger.assets.createCurrency(studio, {
      id: 'mixcoin',
      name: 'Mix coin',
      symbol: 'MIX',
      decimals: 0,
      collection: 'mix',
      metadata: { image: 'ipfs://bafy/x.png', attributes: [], creator: 'Studio' },
    });
    players = await Promise.all(Array.from({ length: 6 }, () => createUser(fx)));
    for (const player of players) {
      await fx.ledger.assets.mint(studio, 'mixcoin', { to: player.wallet as StoredAddress, amount: '1000' });
    }
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('commits every one of 40 mints and 120 transfers fired at once', async () => {
    const started = Date.now();
    const mints = Array.from({ length: 40 }, (_, i) =>
      fx.ledger.assets.mint(studio, 'mixcoin', {
        to: players[i % players.length].wallet as StoredAddress,
        amount: '5',
      }),
    );
    const transfers = Array.from({ length: 120 }, (_, i) => {
      const from = players[i % players.length];
      const to = players[(i + 1 + (i % 5)) % players.length];
      return fx.ledger.transfers.create(from, {
        assetId: 'mixcoin',
        from: from.wallet as StoredAddress,
        to: to.wallet as StoredAddress,
        amount: '1',
      });
    });
    const results = await Promise.allSettled([...mints, ...transfers]);
    const failures = results.filter((result) => result.status === 'rejected');
    expect(failures.map((failure) => String((failure as PromiseRejectedResult).reason))).toEqual([]);
    // Before the fix, PostgreSQL took tens of seconds here (lock convoys behind the currency row).
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('runs again a transaction that lost a deadlock, as the raw driver error reports it', async () => {
    // What pg throws from a query-builder statement: no MikroORM exception class, only the SQLSTATE.
    for (const code of ['40P01', '40001']) {
      let attempts = 0;
      const result = await inTransaction(fx.orm, async () => {
        attempts++;
        if (attempts === 1) throw Object.assign(new Error('deadlock detected'), { code });
        return 'done';
      });
      expect({ code, result, attempts }).toEqual({ code, result: 'done', attempts: 2 });
    }
  });
});

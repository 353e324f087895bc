// The holdings listings' thread on SQLite (src/domain/ledger/reads/sqlite/thread.ts): a thread that stops
// fails the listings waiting on it instead of leaving them hanging, the next listing starts a new one,
// and a listing that fails on the thread fails as an error, not a crash. The count of commits by other
// processes that rides with each listing is the database's one counter, shared with the read cache.
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Uint256Type } from '../../../src/db/types/uint256.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { holdingThread } from '../../../src/domain/ledger/reads/sqlite/thread.ts';
import { createUser, type LedgerFixture, openLedger, type TestUser } from '../../helpers/ledger-fixtures.ts';

describe('the holdings listings thread on sqlite', () => {
  let fx: LedgerFixture;
  let holder: TestUser;
  let path: string;
  let zero: unknown;

  beforeAll(async () => {
    fx = await openLedger('sqlite');
    holder = await createUser(fx);
    await fx.ledger.assets.createNft(holder, {
      name: 'Listed',
      metadata: { image: 'https://cdn.example.com/x.png', attributes: [], creator: 'Studio' },
    });
    path = fx.orm.config.get('dbName') as string;
    zero = new Uint256Type().convertToDatabaseValue(0n, fx.orm.em.getPlatform());
  });
  afterAll(async () => {
    await fx.close();
  });

  const request = () => ({
    op: 'walletAssets' as const,
    wallet: holder.wallet as StoredAddress,
    filters: { limit: 10 },
  });

  it('shares one counter of commits by other processes per database, which sees such a commit', async () => {
    const counter = await fx.database.commitCounter();
    expect(await fx.database.commitCounter()).toBe(counter);
    const before = counter();
    const other = new Database(path);
    try {
      // Changes (an update to the same values commits nothing another connection could see): the
      // name changed and back, as the next test lists it.
      other.prepare("update asset set name = name || ' (renamed)'").run();
      other.prepare("update asset set name = replace(name, ' (renamed)', '')").run();
    } finally {
      other.close();
    }
    // Read at most once a millisecond.
    await new Promise((resolve) => setTimeout(resolve, 2));
    expect(counter()).toBeGreaterThan(before);
  });

  it('settles every waiting listing when stopped, and starts again on the next one', async () => {
    const thread = holdingThread({ path, zero }, () => 0);
    expect(JSON.parse((await thread.list(request())).body.toString('utf8')).data).toHaveLength(1);
    const waiting = Array.from({ length: 50 }, () => thread.list(request()));
    await thread.close();
    const outcomes = await Promise.allSettled(waiting);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/thread stopped/);
    }
    const again = await thread.list(request());
    expect(JSON.parse(again.body.toString('utf8')).data[0].asset.name).toBe('Listed');
    await thread.close();
  });

  it('fails a listing the thread cannot answer (no database file) as an error, and keeps serving', async () => {
    const thread = holdingThread({ path: `${path}.missing/none.sqlite`, zero }, () => 0);
    await expect(thread.list(request())).rejects.toThrow(/holdings listing failed/);
    await expect(thread.list(request())).rejects.toThrow(/holdings listing failed/);
    await thread.close();
  });
});

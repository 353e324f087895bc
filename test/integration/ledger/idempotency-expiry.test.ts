// Expired Idempotency-Key records are removed (src/domain/ledger/idempotency.ts,
// deleteExpiredIdempotencyRecords, run hourly beside event retention): before issue 34 a record stayed
// for ever unless its own key was used again, ~0.5 KB per keyed write. Unexpired records stay and
// still replay; an expired key's next write runs again. Both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyRecord } from '../../../src/db/entities/IdempotencyRecord.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { deleteExpiredIdempotencyRecords } from '../../../src/domain/ledger/idempotency.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { createUser, type LedgerFixture, openLedger, type TestUser } from '../../helpers/ledger-fixtures.ts';

const STRANGER = '0xdbf03b407c01e7cd3cbea99509d93f8dddc8c6fb' as StoredAddress;

describe.each(DB_KINDS)('expired idempotency records on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let player: TestUser;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    player = await createUser(fx, 'player');
    await fx.ledger.collections.create(studio, { id: 'expiry', name: 'Expiry' });
    await fx.ledger.assets.createCurrency(studio, {
      id: 'exp-coin',
      name: 'Coin',
      symbol: 'COIN',
      decimals: 0,
      collection: 'expiry',
      metadata: { image: 'https://cdn.example.com/x.png', attributes: [], creator: 'Studio' },
    });
    await fx.ledger.assets.mint(studio, 'exp-coin', { to: player.wallet as StoredAddress, amount: '1000' });
  });

  afterAll(async () => {
    await fx?.close();
  });

  const input = () => ({
    assetId: 'exp-coin',
    from: player.wallet as StoredAddress,
    to: STRANGER,
    amount: '1',
  });
  const records = async () =>
    (await fx.orm.em.fork().find(IdempotencyRecord, {}, { orderBy: { id: 'asc' } })).map((r) => r.id);

  it('removes the expired records only, in batches; the others still replay', async () => {
    const keys = Array.from({ length: 45 }, (_, n) => `old-${n}`);
    const first = await fx.ledger.transfers.create(player, input(), 'old-0');
    for (const key of keys.slice(1)) await fx.ledger.transfers.create(player, input(), key);
    const kept = await fx.ledger.transfers.create(player, input(), 'kept');
    // Expire the `old-` records: more than two batches of 20.
    await fx.orm.em
      .fork()
      .nativeUpdate(
        IdempotencyRecord,
        { id: { $like: '%:old-%' } },
        { expiresAt: new Date(Date.now() - 1000) },
      );
    const before = await records();
    expect(before).toHaveLength(keys.length + 1);

    expect(await deleteExpiredIdempotencyRecords(fx.orm, new Date(), 20)).toBe(keys.length);
    expect(await records()).toEqual(before.filter((id) => id.endsWith(':kept')));
    // Nothing left to remove.
    expect(await deleteExpiredIdempotencyRecords(fx.orm)).toBe(0);

    // The unexpired key replays its answer; the expired one runs again (a new transfer).
    expect(await fx.ledger.transfers.create(player, input(), 'kept')).toEqual({ ...kept, replayed: true });
    const again = await fx.ledger.transfers.create(player, input(), 'old-0');
    expect(again.replayed).toBe(false);
    expect(again.body.id).not.toBe(first.body.id);
  });
});

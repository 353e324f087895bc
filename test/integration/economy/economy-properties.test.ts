// Issue 21's invariants under random interleavings of single transfers, batches and burns, fired at
// once on real SQLite and PostgreSQL: supply == sum of balances, minted - burned == supply, one owner
// per live NFT and none for a burned one, and the event stream replays to the same holdings.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { expectLedgerHistoryHolds } from '../../helpers/economy-invariants.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'ipfs://bafy/x.png', attributes: [], creator: 'Studio' };
const EXPECTED_REFUSALS = ['/problems/insufficient-balance', '/problems/idempotency-key-reused'];

describe.each(DB_KINDS)('economy invariants on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    await fx.ledger.collections.create(studio, { id: 'eco', name: 'Eco' });
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('keeps every invariant under concurrent transfers, batches and burns', async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => createUser(fx)));
    await fx.ledger.assets.createCurrency(studio, {
      id: 'ore',
      name: 'Ore',
      symbol: 'ORE',
      decimals: 0,
      collection: 'eco',
      metadata,
    });
    for (const user of users)
      await fx.ledger.assets.mint(studio, 'ore', { to: user.wallet as StoredAddress, amount: '30' });
    const nfts: string[] = [];
    for (const user of users)
      for (let i = 0; i < 2; i++)
        nfts.push((await fx.ledger.assets.createNft(user, { name: 'Relic', metadata })).body.id);

    const leg = fc.record({
      from: fc.nat({ max: users.length - 1 }),
      shift: fc.integer({ min: 1, max: users.length - 1 }),
      nft: fc.option(fc.nat({ max: nfts.length - 1 }), { freq: 3 }),
      amount: fc.integer({ min: 1, max: 15 }),
    });
    const operation = fc.oneof(
      fc.record({ op: fc.constant('transfer' as const), leg }),
      fc.record({ op: fc.constant('burn' as const), leg }),
      fc.record({
        op: fc.constant('batch' as const),
        from: fc.nat({ max: users.length - 1 }),
        legs: fc.array(leg, { minLength: 1, maxLength: 5 }),
        retry: fc.boolean(),
      }),
    );
    let round = 0;
    // How many of each kind applied over all runs: the property must exercise every kind.
    const applied = { transfer: 0, burn: 0, batch: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 5, maxLength: 25 }), async (operations) => {
        round++;
        // Burns drain the supply: each run tops every player up, so later runs still move ore.
        for (const user of users)
          await fx.ledger.assets.mint(studio, 'ore', { to: user.wallet as StoredAddress, amount: '10' });
        const input = (from: number, l: { shift: number; nft: number | null; amount: number }) => ({
          assetId: l.nft === null ? 'ore' : nfts[l.nft],
          from: users[from].wallet as StoredAddress,
          to: users[(from + l.shift) % users.length].wallet as StoredAddress,
          amount: l.nft === null ? String(l.amount) : '1',
        });
        const calls = operations.flatMap<() => Promise<unknown>>((operation, i) => {
          const count = <T extends { replayed: boolean }>(result: T) => {
            if (!result.replayed) applied[operation.op]++;
            return result;
          };
          if (operation.op === 'transfer') {
            const { from } = operation.leg;
            return [() => fx.ledger.transfers.create(users[from], input(from, operation.leg)).then(count)];
          }
          if (operation.op === 'burn') {
            const { from } = operation.leg;
            const { assetId, amount } = input(from, operation.leg);
            return [
              () =>
                fx.ledger.transfers
                  .burn(users[from], {
                    assetId,
                    from: users[from].wallet as StoredAddress,
                    amount,
                  })
                  .then(count),
            ];
          }
          // A batch's NFT legs pick among its sender's first NFTs (2 each), so some batches apply.
          const legs = operation.legs.map((l) =>
            input(operation.from, { ...l, nft: l.nft === null ? null : operation.from * 2 + (l.nft % 2) }),
          );
          const key = `${round}-${i}`;
          const call = () => fx.ledger.transfers.batch(users[operation.from], legs, key).then(count);
          return operation.retry ? [call, call] : [call];
        });
        const results = await Promise.allSettled(calls.map((call) => call()));
        for (const result of results) {
          if (result.status === 'rejected') expect(EXPECTED_REFUSALS).toContain(result.reason?.type);
        }
        expect(await checkInvariants(fx.orm)).toEqual([]);
        await expectLedgerHistoryHolds(fx.orm, ['ore']);
      }),
      { numRuns: 30 },
    );
    expect(applied.transfer).toBeGreaterThan(0);
    expect(applied.burn).toBeGreaterThan(0);
    expect(applied.batch).toBeGreaterThan(0);
  }, 120_000);
});

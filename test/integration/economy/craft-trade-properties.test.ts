// Issue 21's invariants under random interleavings of single transfers, crafts and burns (and trades:
// proposals, acceptances and cancellations), fired at once on real SQLite and PostgreSQL: supply ==
// sum of balances, minted - burned == supply, one owner per live NFT and none for a burned one, and
// the event stream replays to the same holdings.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
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
const EXPECTED_REFUSALS = [
  '/problems/insufficient-balance',
  '/problems/idempotency-key-reused',
  '/problems/recipe-input-mismatch',
  '/problems/not-found',
  '/problems/trade-not-open',
];

describe.each(DB_KINDS)('craft and trade invariants on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    await fx.ledger.collections.create(studio, { id: 'forge', name: 'Forge' });
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('keeps every invariant under concurrent transfers, crafts, trades and burns', async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => createUser(fx)));
    for (const id of ['ore', 'dust'])
      await fx.ledger.assets.createCurrency(studio, {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals: 0,
        collection: 'forge',
        metadata,
      });
    const potion = await fx.ledger.recipes.create(studio, 'forge', {
      name: 'Potion',
      inputs: [{ assetId: 'ore', amount: '2' }],
      outputs: [{ nft: { name: 'Potion', metadata } }],
    });
    // Consumes a Relic and an ore, gives a Relic back and 3 dust: Relics never run out.
    const reforge = await fx.ledger.recipes.create(studio, 'forge', {
      name: 'Reforge',
      inputs: [{ nft: { collection: 'forge', name: 'Relic' } }, { assetId: 'ore', amount: '1' }],
      outputs: [{ nft: { name: 'Relic', metadata } }, { assetId: 'dust', amount: '3' }],
    });
    await fx.ledger.assets.mintBatch(
      studio,
      'forge',
      users.flatMap((user) =>
        [0, 1].map(() => ({ to: user.wallet as StoredAddress, nft: { name: 'Relic', metadata } })),
      ),
    );
    const nftIds = async () =>
      (await fx.orm.em.fork().find(Asset, { kind: 'nft' }, { orderBy: { seq: 'asc' } })).map((a) => a.id);
    /** Each wallet's Relics at the start of a round (a reforge mostly names one of its own). */
    const relicsByOwner = async () => {
      const relics = await fx.orm.em
        .fork()
        .find(Asset, { kind: 'nft', name: 'Relic' }, { orderBy: { seq: 'asc' } });
      const byOwner = new Map<string, string[]>();
      for (const relic of relics)
        if (relic.owner) byOwner.set(relic.owner, [...(byOwner.get(relic.owner) ?? []), relic.id]);
      return byOwner;
    };

    const pick = fc.nat({ max: 1_000_000 });
    const operation = fc.oneof(
      fc.record({
        op: fc.constant('transfer' as const),
        from: fc.nat({ max: users.length - 1 }),
        shift: fc.integer({ min: 1, max: users.length - 1 }),
        nft: fc.option(pick, { freq: 2 }),
        amount: fc.integer({ min: 1, max: 8 }),
      }),
      fc.record({
        op: fc.constant('burn' as const),
        from: fc.nat({ max: users.length - 1 }),
        nft: fc.option(pick, { freq: 3 }),
        amount: fc.integer({ min: 1, max: 5 }),
      }),
      fc.record({
        op: fc.constant('trade' as const),
        from: fc.nat({ max: users.length - 1 }),
        shift: fc.integer({ min: 1, max: users.length - 1 }),
        nft: fc.option(pick, { freq: 2 }),
        give: fc.integer({ min: 1, max: 6 }),
        want: fc.integer({ min: 1, max: 6 }),
        close: fc.constantFrom('accept' as const, 'cancel' as const, 'race' as const),
      }),
      fc.record({
        op: fc.constant('craft' as const),
        from: fc.nat({ max: users.length - 1 }),
        recipe: fc.constantFrom('potion', 'reforge'),
        nft: pick,
        retry: fc.boolean(),
      }),
    );
    let round = 0;
    const applied = { transfer: 0, burn: 0, craft: 0, trade: 0 };
    const reforged = { count: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 5, maxLength: 20 }), async (operations) => {
        round++;
        for (const user of users)
          await fx.ledger.assets.mint(studio, 'ore', { to: user.wallet as StoredAddress, amount: '6' });
        const nfts = await nftIds();
        const relics = await relicsByOwner();
        const count =
          (op: keyof typeof applied) =>
          <T extends { replayed: boolean }>(result: T) => {
            if (!result.replayed) applied[op]++;
            return result;
          };
        const calls = operations.flatMap<() => Promise<unknown>>((operation, i) => {
          const user = users[operation.from];
          const wallet = user.wallet as StoredAddress;
          if (operation.op === 'transfer') {
            const to = users[(operation.from + operation.shift) % users.length].wallet as StoredAddress;
            const input =
              operation.nft === null
                ? { assetId: 'ore', from: wallet, to, amount: String(operation.amount) }
                : { assetId: nfts[operation.nft % nfts.length], from: wallet, to, amount: '1' };
            return [() => fx.ledger.transfers.create(user, input).then(count('transfer'))];
          }
          if (operation.op === 'burn') {
            const input =
              operation.nft === null
                ? { assetId: 'ore', from: wallet, amount: String(operation.amount) }
                : { assetId: nfts[operation.nft % nfts.length], from: wallet, amount: '1' };
            return [() => fx.ledger.transfers.burn(user, input).then(count('burn'))];
          }
          if (operation.op === 'trade') {
            const other = users[(operation.from + operation.shift) % users.length];
            const offer =
              operation.nft === null
                ? { assetId: 'ore', amount: String(operation.give) }
                : { assetId: nfts[operation.nft % nfts.length], amount: '1' };
            return [
              async () => {
                const { body: trade } = await fx.ledger.trades.create(user, {
                  fromWallet: wallet,
                  toWallet: other.wallet as StoredAddress,
                  offer: [offer],
                  request: [{ assetId: 'ore', amount: String(operation.want) }],
                });
                if (operation.close === 'cancel') return fx.ledger.trades.cancel(user, trade.id);
                if (operation.close === 'accept')
                  return fx.ledger.trades.accept(other, trade.id).then(count('trade'));
                // An acceptance racing a cancellation: exactly one applies.
                const [accepted, cancelled] = await Promise.allSettled([
                  fx.ledger.trades.accept(other, trade.id, `${round}-${i}`),
                  fx.ledger.trades.cancel(user, trade.id),
                ]);
                if (accepted.status === 'fulfilled') applied.trade++;
                const wins = [accepted, cancelled].filter((r) => r.status === 'fulfilled').length;
                // (An acceptance refused for a balance another operation took leaves the trade open, so
                // the cancellation applies: still exactly one.)
                expect(wins).toBe(1);
                return accepted;
              },
            ];
          }
          const recipe = operation.recipe === 'potion' ? potion.id : reforge.id;
          // Three reforges in four name one of the crafter's own Relics (which a concurrent operation
          // may still take), the rest any NFT (mostly refused: not a Relic, or not the crafter's).
          const own = relics.get(wallet) ?? [];
          const nft =
            own.length > 0 && operation.nft % 4 !== 0
              ? own[operation.nft % own.length]
              : nfts[operation.nft % nfts.length];
          const input = operation.recipe === 'potion' ? { wallet } : { wallet, nfts: [nft] };
          const key = `${round}-${i}`;
          const call = () =>
            fx.ledger.recipes.craft(user, recipe, input, key).then((result) => {
              if (!result.replayed && operation.recipe === 'reforge') reforged.count++;
              return count('craft')(result);
            });
          return operation.retry ? [call, call] : [call];
        });
        const results = await Promise.allSettled(calls.map((call) => call()));
        for (const result of results) {
          if (result.status === 'rejected') expect(EXPECTED_REFUSALS).toContain(result.reason?.type);
        }
        expect(await checkInvariants(fx.orm)).toEqual([]);
        await expectLedgerHistoryHolds(fx.orm, ['ore', 'dust']);
      }),
      { numRuns: 25 },
    );
    expect(applied.transfer).toBeGreaterThan(0);
    expect(applied.burn).toBeGreaterThan(0);
    expect(applied.craft).toBeGreaterThan(0);
    expect(reforged.count).toBeGreaterThan(0);
    expect(applied.trade).toBeGreaterThan(0);
  }, 180_000);
});

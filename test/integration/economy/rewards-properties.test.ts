// Issue 36's invariants under random interleavings, fired at once on real SQLite and PostgreSQL:
// store purchases (some paid with a timed item by template), loot box openings, claim code redemptions, expiry sweeps, transfers and burns of
// the currency and of timed items (some past their end, not yet swept). After each run: supply ==
// sum of balances (and one holder per live NFT), the offer's and the code's limits never exceeded
// (units sold == the purchases' quantities == the wallets' counts), and an item past its end never
// moved: it is still with the holder it had at its end, or the sweep burned it from that holder once;
// every item a purchase paid with is burned, and no item paid twice.
// With timed grants of the currency (lots, some past their end): sum(lots) + reserved <= balance
// always (checkInvariants), and a lot past its end was never spent: whole, or burned once.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import { CurrencyLot } from '../../../src/db/entities/CurrencyLot.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { StoreOffer, StoreOfferWallet, StorePurchase } from '../../../src/db/entities/StoreOffer.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'ipfs://bafy/x.png', attributes: [], creator: 'Studio' };
const ZERO = '0x0000000000000000000000000000000000000000';
const CODE = 'PROP-CODE-0001';
const LIMITS = { offerTotal: 7, offerPerWallet: 3, codeTotal: 4, codePerWallet: 2 };
const EXPECTED_REFUSALS = [
  '/problems/insufficient-balance',
  '/problems/item-expired',
  '/problems/offer-limit-reached',
  '/problems/draw-seed-changed',
  // A purchase paying with a timed item another operation burned first (before the purchase read it).
  '/problems/store-items-mismatch',
];

describe.each(DB_KINDS)('store, loot box, claim code and expiry invariants on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let users: TestUser[];
  let offerId: string;
  let itemOfferId: string;
  let codeId: string;
  let boxId: string;
  const commitments = new Map<string, string>();
  const wallet = (user: TestUser) => user.wallet as StoredAddress;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    users = await Promise.all(Array.from({ length: 3 }, () => createUser(fx)));
    await fx.ledger.collections.create(studio, { id: 'prop', name: 'Prop' });
    for (const id of ['ore', 'gem'])
      await fx.ledger.assets.createCurrency(studio, {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals: 0,
        collection: 'prop',
        metadata,
      });
    for (const user of users)
      await fx.ledger.assets.mint(studio, 'ore', { to: wallet(user), amount: '1000' });
    offerId = (
      await fx.ledger.stores.create(studio, 'prop', {
        name: 'Potion',
        price: [{ assetId: 'ore', amount: '2' }],
        grants: [{ nft: { name: 'Potion', metadata } }],
        payTo: wallet(studio),
        perWalletLimit: LIMITS.offerPerWallet,
        totalLimit: LIMITS.offerTotal,
      })
    ).id;
    itemOfferId = (
      await fx.ledger.stores.create(studio, 'prop', {
        name: 'Gem for a pass',
        price: [{ nft: { name: 'Pass', quantity: 1 } }],
        grants: [{ assetId: 'gem', amount: '1' }],
        payTo: wallet(studio),
      })
    ).id;
    codeId = (
      await fx.ledger.stores.createClaimCodes(studio, 'prop', {
        grants: [{ assetId: 'gem', amount: '5' }],
        code: CODE,
        maxRedemptions: LIMITS.codeTotal,
        perWalletLimit: LIMITS.codePerWallet,
      })
    ).codes[0].claimCode.id;
    const table = await fx.ledger.lootBoxes.createTable(studio, 'prop', {
      name: 'Chest table',
      entries: [
        { weight: 1, outcome: { assetId: 'gem', amount: '3' } },
        { weight: 1, outcome: null },
        { weight: 1, outcome: { nft: { name: 'Egg', metadata } } },
      ],
    });
    boxId = (
      await fx.ledger.lootBoxes.createBox(studio, 'prop', { name: 'Chest', table: table.id, paid: false })
    ).id;
    for (const user of users)
      commitments.set(user.wallet, (await fx.ledger.lootBoxes.commitSeed(user, wallet(user))).commitment);
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('keeps supply, limits and "an expired item never moves" under interleaved operations', async () => {
    const who = fc.nat({ max: 2 });
    const operation = fc.oneof(
      fc.record({ op: fc.constant('purchase' as const), who, quantity: fc.integer({ min: 1, max: 2 }) }),
      fc.record({ op: fc.constant('open' as const), who, box: fc.nat({ max: 1 }) }),
      fc.record({ op: fc.constant('pay' as const), who, item: fc.nat({ max: 1 }) }),
      fc.record({ op: fc.constant('redeem' as const), who }),
      fc.record({ op: fc.constant('expire' as const) }),
      fc.record({
        // Transfers twice as often as burns: many are refused (a lot or an item past its end), and the
        // property must apply at least one of each kind (checked at the end).
        op: fc.constantFrom('transfer' as const, 'transfer' as const, 'burn' as const),
        who,
        // null: 1 ore; else one of the sender's two timed items of the run.
        item: fc.option(fc.nat({ max: 1 }), { freq: 2 }),
        to: fc.integer({ min: 1, max: 2 }),
      }),
    );
    type Operation = typeof operation extends fc.Arbitrary<infer T> ? T : never;
    /**
     * One of each kind, none refused: player 2 pays with its first item (not ended), player 0's first
     * item and lot are past their end, and the sweep burns that lot.
     */
    const EVERY_KIND: [Operation[], boolean[], boolean[]] = [
      [
        { op: 'purchase', who: 0, quantity: 1 },
        { op: 'open', who: 1, box: 0 },
        { op: 'pay', who: 2, item: 0 },
        { op: 'redeem', who: 0 },
        { op: 'expire' },
        { op: 'transfer', who: 1, item: null, to: 1 },
        { op: 'burn', who: 0, item: null, to: 1 },
      ],
      [true, false, false, false, false, false],
      [true, false, false],
    ];
    const applied = { purchase: 0, pay: 0, open: 0, redeem: 0, expire: 0, transfer: 0, burn: 0 };
    let round = 0;
    let lotsBurned = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { minLength: 4, maxLength: 14 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        async (operations, ended, lotEnded) => {
          round++;
          const em = fx.orm.em.fork();
          // Issue 36, timed currency grants: each player gets a lot of ore (an amount of its own this
          // run), spent first by its transfers, burns and purchases; some lots past their end.
          const lotAmount = BigInt(10 + round);
          const sources: string[] = [];
          for (const user of users) {
            const minted = await fx.ledger.assets.mint(studio, 'ore', {
              to: wallet(user),
              amount: String(lotAmount),
              expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
            });
            sources.push((minted.body as { id: string }).id);
          }
          const lotEndedAt = new Date(Date.now() - 1000);
          const pastLots = await em.find(CurrencyLot, {
            sourceId: { $in: sources.filter((_, u) => lotEnded[u]) },
          });
          if (pastLots.length)
            await em.nativeUpdate(
              CurrencyLot,
              { id: { $in: pastLots.map((lot) => lot.id) } },
              { expiresAt: lotEndedAt },
            );
          // Each run: two boxes and two timed items per player; some timed items past their end.
          const later = new Date(Date.now() + 3_600_000).toISOString();
          const made = await fx.ledger.assets.mintBatch(
            studio,
            'prop',
            users.flatMap((user) =>
              ['Chest', 'Chest', 'Pass', 'Pass'].map((name) => ({
                to: wallet(user),
                nft: { name, metadata, ...(name === 'Pass' && { expiresAt: later }) },
              })),
            ),
          );
          const ids = made.body.nfts.map((nft) => nft.id);
          const boxes = users.map((_, u) => ids.slice(u * 4, u * 4 + 2));
          const timed = users.map((_, u) => ids.slice(u * 4 + 2, u * 4 + 4));
          const past = timed.flat().filter((_, i) => ended[i]);
          const endedAt = new Date(Date.now() - 1000);
          if (past.length) await em.nativeUpdate(Asset, { id: { $in: past } }, { expiresAt: endedAt });
          const holderAtEnd = new Map(
            (await em.find(Asset, { id: { $in: past } }, { fields: ['owner'] })).map((a) => [a.id, a.owner]),
          );

          const calls = operations.map((o, i) => async () => {
            const key = `r${round}-${i}`;
            if (o.op === 'expire') return fx.ledger.expiries.expireDue(new Date(), 100);
            const user = users[o.who];
            if (o.op === 'purchase')
              return fx.ledger.stores.purchase(
                user,
                offerId,
                { wallet: wallet(user), version: 1, quantity: o.quantity },
                key,
              );
            if (o.op === 'pay')
              return fx.ledger.stores.purchase(
                user,
                itemOfferId,
                { wallet: wallet(user), version: 1, items: [timed[o.who][o.item]] },
                key,
              );
            if (o.op === 'redeem')
              return fx.ledger.stores.redeem(user, { wallet: wallet(user), code: CODE }, key);
            if (o.op === 'open')
              return fx.ledger.lootBoxes.open(
                user,
                boxId,
                {
                  wallet: wallet(user),
                  assetId: boxes[o.who][o.box],
                  clientSeed: key,
                  seedCommitment: commitments.get(user.wallet) as string,
                },
                key,
              );
            const assetId = o.item === null ? 'ore' : timed[o.who][o.item];
            if (o.op === 'burn')
              return fx.ledger.transfers.burn(user, { assetId, from: wallet(user), amount: '1' }, key);
            return fx.ledger.transfers.create(
              user,
              { assetId, from: wallet(user), to: wallet(users[(o.who + o.to) % 3]), amount: '1' },
              key,
            );
          });
          const results = await Promise.allSettled(calls.map((call) => call()));
          results.forEach((result, i) => {
            if (result.status === 'rejected') expect(EXPECTED_REFUSALS).toContain(result.reason?.type);
            else applied[operations[i].op]++;
          });

          expect(await checkInvariants(fx.orm)).toEqual([]);
          // Limits: units sold == the purchases' quantities == the wallets' counts, within the limits.
          for (const [id, total, perWallet] of [
            [offerId, LIMITS.offerTotal, LIMITS.offerPerWallet],
            [codeId, LIMITS.codeTotal, LIMITS.codePerWallet],
          ] as const) {
            const check = fx.orm.em.fork();
            const { sold } = await check.findOneOrFail(StoreOffer, { id });
            const bought = await check.find(StoreOfferWallet, { offerId: id });
            const purchases = await check.find(StorePurchase, { offerId: id });
            expect(sold).toBeLessThanOrEqual(total);
            expect(bought.reduce((n, b) => n + b.bought, 0)).toBe(sold);
            expect(purchases.reduce((n, p) => n + p.quantity, 0)).toBe(sold);
            for (const b of bought) expect(b.bought).toBeLessThanOrEqual(perWallet);
          }
          // Every item paid with is burned, none paid twice.
          const paidItems = (await fx.orm.em.fork().find(StorePurchase, { offerId: itemOfferId })).map(
            (p) => p.paid[0].assetId,
          );
          expect(new Set(paidItems).size).toBe(paidItems.length);
          const paidOwners = await fx.orm.em
            .fork()
            .find(Asset, { id: { $in: paidItems } }, { fields: ['owner'] });
          for (const asset of paidOwners) expect(asset.owner).toBe(ZERO);
          // A lot past its end was never spent: whole in its wallet, or burned from it once by a sweep.
          const check = fx.orm.em.fork();
          for (const lot of pastLots) {
            const now = await check.findOne(CurrencyLot, { id: lot.id });
            const burns = (
              await check.find(Transfer, {
                asset: 'ore',
                fromAddress: lot.wallet,
                toAddress: ZERO,
                createdAt: { $gte: lotEndedAt },
              } as never)
            ).filter((m) => m.amount === lotAmount);
            if (now) expect([now.wallet, now.amount, burns.length]).toEqual([lot.wallet, lotAmount, 0]);
            else {
              expect(burns).toHaveLength(1);
              lotsBurned++;
            }
          }
          // An item past its end never moved: with its holder at its end, or burned from it once.
          for (const id of past) {
            const asset = await check.findOneOrFail(Asset, { id }, { fields: ['owner', 'expiresAt'] });
            const moves = await check.find(Transfer, { asset: id, createdAt: { $gte: endedAt } } as never);
            if (asset.owner === ZERO) {
              expect(asset.expiresAt ?? null).toBeNull();
              expect(moves.map((m) => [m.fromAddress, m.toAddress])).toEqual([[holderAtEnd.get(id), ZERO]]);
              expect(await check.count(OutboxEvent, { type: 'itemExpired', assetId: id })).toBe(1);
            } else {
              expect([asset.owner, moves.length]).toEqual([holderAtEnd.get(id), 0]);
            }
          }
        },
      ),
      // 15 random interleavings after one run that applies every kind (fast-check counts examples
      // among numRuns; a random draw of 15 once applied no payment with an item in a CI run: each is
      // refused when its item ended or moved first).
      { numRuns: 16, examples: [EVERY_KIND] },
    );
    // The property exercised every kind.
    for (const [op, count] of Object.entries(applied)) expect([op, count > 0]).toEqual([op, true]);
    expect(lotsBurned).toBeGreaterThan(0);
  }, 120_000);
});

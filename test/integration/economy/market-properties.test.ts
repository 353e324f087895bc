// Issue 35's invariants under random interleavings of listings, purchases (sometimes two buyers at
// once), cancellations, offers (made, accepted, sometimes by two holders at once or against a
// cancellation, cancelled), auctions (opened, bid on, settled while other operations run), transfers,
// burns and freezes, fired at once on real SQLite and PostgreSQL: every reserved unit is accounted
// for by an open offer, a best bid or an escrowed item (no reserved amount spent twice, never more
// reserved than held), each accepted offer and sold auction has exactly one sale; no
// listing sold twice, no sale without the buyer's funds (no balance ever below zero), every sale's
// price == seller + royalty + fee exactly and paid by the transfers of its operation, an NFT sold only
// by its holder (the sale's item transfer is from the seller), supply == sum of balances, one holder
// per live NFT, and the event stream replays to the same holdings.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import { Auction } from '../../../src/db/entities/Auction.ts';
import { Holding } from '../../../src/db/entities/Holding.ts';
import { Listing } from '../../../src/db/entities/Listing.ts';
import { Offer } from '../../../src/db/entities/Offer.ts';
import { Sale } from '../../../src/db/entities/Sale.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { createIdempotency } from '../../../src/domain/ledger/idempotency.ts';
import { createLegWriter } from '../../../src/domain/ledger/leg-writer.ts';
import { createMarketService, type MarketService } from '../../../src/domain/ledger/market.ts';
import type { LedgerStore } from '../../../src/domain/ledger/store/plan.ts';
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
const FEE_WALLET = '0x00000000000000000000000000000000000fee02' as StoredAddress;
const EXPECTED_REFUSALS = [
  '/problems/insufficient-balance',
  '/problems/listing-not-active',
  '/problems/own-listing',
  '/problems/asset-frozen',
  '/problems/not-found',
  // A cancellation by another than the seller.
  '/problems/wallet-not-controlled',
  // Offers and auctions (an offer accepted, cancelled or expired meanwhile; an item not the one
  // offered for; a bid beaten meanwhile, or on an auction settled meanwhile).
  '/problems/offer-not-open',
  '/problems/own-offer',
  '/problems/offer-item-mismatch',
  '/problems/auction-not-open',
  '/problems/bid-too-low',
  '/problems/own-auction',
  '/problems/asset-soulbound',
  // A bid that kept meeting newer bids.
  '/problems/conflict',
];

describe.each(DB_KINDS)('marketplace invariants on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let market: MarketService;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    await fx.ledger.collections.create(studio, { id: 'bazaar', name: 'Bazaar' });
    const idempotency = createIdempotency(fx.database, 600);
    const store = fx.database.store;
    market = createMarketService(
      fx.database,
      idempotency,
      store,
      createLegWriter(fx.database, idempotency, store),
      {
        feeBps: 250,
        feeWallet: FEE_WALLET,
        maxRoyaltyBps: 1000,
        sweepMs: 5000,
      },
    );
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('never sells a listing twice or without funds, and conserves value exactly', async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => createUser(fx)));
    for (const id of ['coin', 'ore'])
      await fx.ledger.assets.createCurrency(studio, {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals: 0,
        collection: 'bazaar',
        metadata,
      });
    await market.setSettings(studio, 'bazaar', { royaltyBps: 700 });
    await fx.ledger.assets.mintBatch(
      studio,
      'bazaar',
      users.flatMap((user) =>
        [0, 1, 2].map(() => ({ to: user.wallet as StoredAddress, nft: { name: 'Relic', metadata } })),
      ),
    );
    const nftIds = async () =>
      (await fx.orm.em.fork().find(Asset, { kind: 'nft' }, { orderBy: { seq: 'asc' } })).map((a) => a.id);
    const activeListings = async () =>
      (await fx.orm.em.fork().find(Listing, { status: 'active' }, { orderBy: { id: 'asc' } })).map(
        (l) => l.id,
      );

    const pick = fc.nat({ max: 1_000_000 });
    const user = fc.nat({ max: users.length - 1 });
    // Listings and purchases weigh more: the marketplace's first rules, and a race needs a listing.
    const operation = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          op: fc.constant('list' as const),
          from: user,
          nft: fc.option(pick, { freq: 3 }),
          amount: fc.integer({ min: 1, max: 8 }),
          price: fc.integer({ min: 1, max: 400 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          op: fc.constant('buy' as const),
          from: user,
          listing: pick,
          race: fc.boolean(),
        }),
      },
      fc.record({ op: fc.constant('cancel' as const), from: user, listing: pick }),
      fc.record({
        op: fc.constant('transfer' as const),
        from: user,
        shift: fc.integer({ min: 1, max: users.length - 1 }),
        nft: fc.option(pick, { freq: 2 }),
        amount: fc.integer({ min: 1, max: 8 }),
      }),
      fc.record({ op: fc.constant('burn' as const), from: user, nft: fc.option(pick, { freq: 3 }) }),
      fc.record({ op: fc.constant('freeze' as const), nft: pick, frozen: fc.boolean() }),
      fc.record({
        op: fc.constant('offer' as const),
        from: user,
        nft: fc.option(pick, { freq: 3 }),
        price: fc.integer({ min: 1, max: 200 }),
      }),
      fc.record({
        op: fc.constant('accept' as const),
        from: user,
        offer: pick,
        nft: pick,
        race: fc.constantFrom('none', 'holder', 'cancel'),
      }),
      fc.record({ op: fc.constant('cancelOffer' as const), from: user, offer: pick }),
      fc.record({ op: fc.constant('auction' as const), from: user, nft: pick }),
      fc.record({
        op: fc.constant('bid' as const),
        from: user,
        auction: pick,
        amount: fc.integer({ min: 1, max: 60 }),
      }),
      fc.record({ op: fc.constant('settle' as const), auction: pick }),
    );
    const applied = { list: 0, buy: 0, raced: 0, offer: 0, accept: 0, auction: 0, bid: 0, settle: 0 };
    const openOffers = async () =>
      (await fx.orm.em.fork().find(Offer, { status: 'open' }, { orderBy: { id: 'asc' } })).map((o) => o);
    const openAuctions = async () =>
      (await fx.orm.em.fork().find(Auction, { status: 'open' }, { orderBy: { id: 'asc' } })).map((a) => a.id);
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 5, maxLength: 16 }), async (operations) => {
        for (const holder of users) {
          await fx.ledger.assets.mint(studio, 'coin', { to: holder.wallet as StoredAddress, amount: '300' });
          await fx.ledger.assets.mint(studio, 'ore', { to: holder.wallet as StoredAddress, amount: '5' });
        }
        // Every run sells at least once before its random operations (12 random runs once ended with
        // no purchase applied at all, the buys all hitting ended listings): a sale must succeed here.
        const guaranteed = await market.createListing(users[0], {
          wallet: users[0].wallet as StoredAddress,
          assetId: 'ore',
          amount: '1',
          currency: 'coin',
          price: '1',
        });
        await market.buy(users[1], guaranteed.body.id, users[1].wallet as StoredAddress);
        applied.buy++;
        // And makes one offer and opens one auction (on an NFT minted for it), for the same reason.
        await market.createOffer(users[2], {
          wallet: users[2].wallet as StoredAddress,
          collection: 'bazaar',
          currency: 'coin',
          price: '1',
        });
        applied.offer++;
        const [fresh] = (
          await fx.ledger.assets.mintBatch(studio, 'bazaar', [
            { to: users[3].wallet as StoredAddress, nft: { name: 'Lot', metadata } },
          ])
        ).body.nfts;
        await market.createAuction(users[3], {
          wallet: users[3].wallet as StoredAddress,
          assetId: fresh.id,
          currency: 'coin',
          reservePrice: '5',
          minIncrement: '3',
          duration: 3600,
        });
        applied.auction++;
        const nfts = await nftIds();
        const listings = await activeListings();
        const offers = await openOffers();
        const auctions = await openAuctions();
        const calls = operations.map((operation) => async () => {
          if (operation.op === 'settle') {
            if (auctions.length === 0) return undefined;
            const id = auctions[operation.auction % auctions.length];
            await fx.orm.em.fork().nativeUpdate(Auction, { id }, { endsAt: new Date(Date.now() - 1000) });
            // Settled while other operations run, and twice at once: once.
            const settled = await Promise.all([
              market.settleAuctions(new Date(), 100),
              market.settleAuctions(new Date(), 100),
            ]);
            applied.settle += settled[0] + settled[1];
            return undefined;
          }
          if (operation.op === 'offer') {
            const actor = users[operation.from];
            const target =
              operation.nft === null
                ? { collection: 'bazaar' }
                : { assetId: nfts[operation.nft % nfts.length] };
            const made = await market.createOffer(actor, {
              wallet: actor.wallet as StoredAddress,
              ...target,
              currency: 'coin',
              price: String(operation.price),
            });
            applied.offer++;
            return made;
          }
          if (operation.op === 'accept' || operation.op === 'cancelOffer') {
            if (offers.length === 0) return undefined;
            const offer = offers[operation.offer % offers.length];
            const actor = users[operation.from];
            if (operation.op === 'cancelOffer') return market.cancelOffer(actor, offer.id);
            const accept = (holder: TestUser, nft: number) =>
              market.acceptOffer(holder, offer.id, {
                wallet: holder.wallet as StoredAddress,
                assetId: offer.assetId ?? nfts[nft % nfts.length],
              });
            if (operation.race === 'none') return accept(actor, operation.nft).then(() => applied.accept++);
            const other = users[(operation.from + 1) % users.length];
            const results = await Promise.allSettled([
              accept(actor, operation.nft),
              operation.race === 'holder'
                ? accept(other, operation.nft + 1)
                : market.cancelOffer(
                    users.find((u) => u.wallet.toLowerCase() === offer.bidderWallet) ?? actor,
                    offer.id,
                  ),
            ]);
            // An offer pays at most once, and is never both accepted and cancelled.
            expect(results.filter((r) => r.status === 'fulfilled').length).toBeLessThanOrEqual(1);
            if (results[0].status === 'fulfilled') applied.accept++;
            for (const result of results)
              if (result.status === 'rejected') expect(EXPECTED_REFUSALS).toContain(result.reason?.type);
            return undefined;
          }
          if (operation.op === 'auction') {
            const actor = users[operation.from];
            const made = await market.createAuction(actor, {
              wallet: actor.wallet as StoredAddress,
              assetId: nfts[operation.nft % nfts.length],
              currency: 'coin',
              reservePrice: '5',
              minIncrement: '3',
              duration: 3600,
            });
            applied.auction++;
            return made;
          }
          if (operation.op === 'bid') {
            if (auctions.length === 0) return undefined;
            const actor = users[operation.from];
            const made = await market.bid(actor, auctions[operation.auction % auctions.length], {
              wallet: actor.wallet as StoredAddress,
              amount: String(operation.amount),
            });
            applied.bid++;
            return made;
          }
          if (operation.op === 'freeze')
            return fx.ledger.assetUpdates.setFrozen(
              studio,
              nfts[operation.nft % nfts.length],
              operation.frozen,
            );
          const actor = users[operation.from];
          const wallet = actor.wallet as StoredAddress;
          if (operation.op === 'list') {
            const item =
              operation.nft === null
                ? { assetId: 'ore', amount: String(operation.amount) }
                : { assetId: nfts[operation.nft % nfts.length] };
            const made = await market.createListing(actor, {
              wallet,
              ...item,
              currency: 'coin',
              price: String(operation.price),
            });
            applied.list++;
            return made;
          }
          if (operation.op === 'cancel' || operation.op === 'buy') {
            if (listings.length === 0) return undefined;
            const listingId = listings[operation.listing % listings.length];
            if (operation.op === 'cancel') return market.cancelListing(actor, listingId);
            if (!operation.race) return market.buy(actor, listingId, wallet).then(() => applied.buy++);
            // Two buyers at once: at most one wins.
            const other = users[(operation.from + 1) % users.length];
            const results = await Promise.allSettled([
              market.buy(actor, listingId, wallet),
              market.buy(other, listingId, other.wallet as StoredAddress),
            ]);
            const wins = results.filter((r) => r.status === 'fulfilled').length;
            expect(wins).toBeLessThanOrEqual(1);
            applied.buy += wins;
            applied.raced++;
            for (const result of results)
              if (result.status === 'rejected') expect(EXPECTED_REFUSALS).toContain(result.reason?.type);
            return undefined;
          }
          const to = users[
            (operation.from + (operation.op === 'transfer' ? operation.shift : 1)) % users.length
          ].wallet as StoredAddress;
          const input =
            operation.nft === null
              ? {
                  assetId: 'ore',
                  from: wallet,
                  amount: String(operation.op === 'transfer' ? operation.amount : 1),
                }
              : { assetId: nfts[operation.nft % nfts.length], from: wallet, amount: '1' };
          return operation.op === 'transfer'
            ? fx.ledger.transfers.create(actor, { ...input, to })
            : fx.ledger.transfers.burn(actor, input);
        });
        const results = await Promise.allSettled(calls.map((call) => call()));
        for (const result of results)
          if (result.status === 'rejected') expect(EXPECTED_REFUSALS).toContain(result.reason?.type);

        expect(await checkInvariants(fx.orm)).toEqual([]);
        await expectLedgerHistoryHolds(fx.orm, ['coin', 'ore']);
        const em = fx.orm.em.fork();
        const sales = await em.find(Sale, {});
        const sold = await em.find(Listing, { status: 'sold' });
        // Each sold listing, accepted offer and sold auction has exactly one sale, and each sale
        // settled its own listing, offer or auction.
        const settled = [
          ...sold.map((l) => l.id),
          ...(await em.find(Offer, { status: 'accepted' })).map((o) => o.id),
          ...(await em.find(Auction, { status: 'sold' })).map((a) => a.id),
        ];
        expect(sales.map((s) => s.listingId).sort()).toEqual(settled.sort());
        // Every reserved unit is an open offer's price, an open auction's best bid or its escrowed
        // item: nothing reserved twice, nothing released twice, nothing reserved spent.
        const owed = new Map<string, bigint>();
        const owe = (asset: string, wallet: string, amount: bigint) =>
          owed.set(`${asset}|${wallet}`, (owed.get(`${asset}|${wallet}`) ?? 0n) + amount);
        for (const o of await em.find(Offer, { status: 'open' }))
          owe(o.currencyId, o.bidderWallet, o.price as bigint);
        for (const a of await em.find(Auction, { status: 'open' })) {
          owe(a.assetId, a.sellerWallet, 1n);
          if (a.bestBidder) owe(a.currencyId, a.bestBidder, a.bestBid as bigint);
        }
        const held = new Map<string, bigint>();
        for (const h of await em.find(Holding, {}))
          if ((h.reserved as bigint) > 0n) held.set(`${h.asset.id}|${h.wallet}`, h.reserved as bigint);
        expect(held).toEqual(owed);
        // Transfers carry no operation id: a sale's moves are found by their instant. Sales applied in
        // the same millisecond by one buyer are summed together (one sale's moves alone were once
        // compared with two sales' payments).
        const paidFor = new Map<string, bigint>();
        const deliveredFor = new Map<string, bigint>();
        for (const sale of sales) {
          const price = sale.price as bigint;
          expect((sale.sellerProceeds as bigint) + (sale.royalty as bigint) + (sale.fee as bigint)).toBe(
            price,
          );
          const at = sale.createdAt.getTime();
          const paid = `${sale.buyerWallet}|${sale.currencyId}|${at}`;
          paidFor.set(paid, (paidFor.get(paid) ?? 0n) + price);
          const delivered = `${sale.sellerWallet}|${sale.buyerWallet}|${sale.assetId}|${at}`;
          deliveredFor.set(delivered, (deliveredFor.get(delivered) ?? 0n) + (sale.amount as bigint));
        }
        for (const [key, price] of paidFor) {
          const [buyer, currency, at] = key.split('|');
          const moves = await em.find(Transfer, {
            asset: currency,
            fromAddress: buyer,
            createdAt: new Date(Number(at)),
          });
          expect(moves.reduce((sum, move) => sum + (move.amount as bigint), 0n)).toBe(price);
        }
        for (const [key, amount] of deliveredFor) {
          const [seller, buyer, asset, at] = key.split('|');
          const moves = await em.find(Transfer, {
            asset,
            fromAddress: seller,
            toAddress: buyer,
            createdAt: new Date(Number(at)),
          });
          expect(moves.reduce((sum, move) => sum + (move.amount as bigint), 0n)).toBe(amount);
        }
      }),
      { numRuns: 12 },
    );
    expect(applied.list).toBeGreaterThan(0);
    expect(applied.buy).toBeGreaterThan(0);
    expect(applied.raced).toBeGreaterThan(0);
    expect(applied.offer).toBeGreaterThan(0);
    expect(applied.auction).toBeGreaterThan(0);
  }, 240_000);

  it('a metadata change committing while a trait offer is accepted: the version guard refuses the plan, the item is read again', async () => {
    // The store between the acceptance's read of the item and its plan: `between` runs there once
    // (a metadata update committing), then the plan applies as it was decided.
    const store = fx.database.store;
    let between: (() => Promise<unknown>) | undefined;
    const outcomes: string[] = [];
    const racing: LedgerStore = {
      async apply(plan) {
        const acceptance = plan.guards.some((g) => g.kind === 'assetVersion') && plan.offerStatuses?.length;
        if (acceptance && between) {
          const change = between;
          between = undefined;
          await change();
        }
        const outcome = await store.apply(plan);
        if (acceptance) outcomes.push(outcome.outcome);
        return outcome;
      },
    };
    const idempotency = createIdempotency(fx.database, 600);
    const raced = createMarketService(
      fx.database,
      idempotency,
      racing,
      createLegWriter(fx.database, idempotency, racing),
      {
        feeBps: 0,
        feeWallet: null,
        maxRoyaltyBps: 1000,
        sweepMs: 5000,
      },
    );
    const [bidder, holder] = await Promise.all([createUser(fx), createUser(fx)]);
    await fx.ledger.collections.create(studio, {
      id: 'traits',
      name: 'Traits',
      mutableAttributes: ['rarity', 'level'],
    });
    await fx.ledger.assets.createCurrency(studio, {
      id: 'tcoin',
      name: 'tcoin',
      symbol: 'TCOIN',
      decimals: 0,
      collection: 'traits',
      metadata,
    });
    await fx.ledger.assets.mint(studio, 'tcoin', { to: bidder.wallet as StoredAddress, amount: '100' });
    const attributes = [
      { trait_type: 'rarity', value: 'rare' },
      { trait_type: 'level', value: 3 },
    ];
    const [kept, lost] = (
      await fx.ledger.assets.mintBatch(
        studio,
        'traits',
        [0, 1].map(() => ({
          to: holder.wallet as StoredAddress,
          nft: { name: 'Charm', metadata: { ...metadata, attributes } },
        })),
      )
    ).body.nfts.map((n) => n.id);
    const traitOffer = async () =>
      (
        await raced.createOffer(bidder, {
          wallet: bidder.wallet as StoredAddress,
          collection: 'traits',
          trait: { type: 'rarity', value: 'rare' },
          currency: 'tcoin',
          price: '10',
        })
      ).body;
    const change = (id: string, next: typeof attributes) => () =>
      fx.ledger.assetUpdates.updateMetadata(studio, id, { attributes: next });
    const accept = (offerId: string, assetId: string) =>
      raced.acceptOffer(holder, offerId, { wallet: holder.wallet as StoredAddress, assetId });

    // Still rare after the change: refused once on the version, read again, sold.
    const first = await traitOffer();
    between = change(kept, [attributes[0], { trait_type: 'level', value: 4 }]);
    const sold = await accept(first.id, kept);
    expect(outcomes).toEqual(['rejected', 'applied']);
    expect(sold.body.offer).toMatchObject({ status: 'accepted', soldAssetId: kept, trait: first.trait });
    // No longer rare: refused on the version, read again, 409; nothing moved, the price still reserved.
    outcomes.length = 0;
    const second = await traitOffer();
    between = change(lost, [{ trait_type: 'rarity', value: 'common' }]);
    await expect(accept(second.id, lost)).rejects.toMatchObject({
      status: 409,
      type: '/problems/offer-item-mismatch',
    });
    expect(outcomes).toEqual(['rejected']);
    const em = fx.orm.em.fork();
    expect((await em.findOneOrFail(Asset, { id: lost })).owner).toBe(holder.wallet);
    expect((await em.findOneOrFail(Asset, { id: kept })).owner).toBe(bidder.wallet);
    expect(await raced.getOffer(second.id)).toMatchObject({ status: 'open' });
    expect(
      (await em.findOneOrFail(Holding, { asset: 'tcoin', wallet: bidder.wallet } as never)).reserved,
    ).toBe(10n);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });
});

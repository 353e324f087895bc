// Issue 35: English auctions through the real app over HTTP, on both databases: the item escrowed
// (it cannot move, be listed or auctioned again), every refusal, bids reserved and the previous best
// refunded at once (the reserve, the minimum increment, raising one's own bid, racing bids), the
// extension of a late bid, settlement by the market keeper at the end (sold: the item, seller +
// royalty + fee == the bid paid from its reservation, the sale, one op id; unsold without a bid: the
// item released), exactly once however many sweep, and on PostgreSQL with two instances on one
// database and after a restart; the events on /ws checked against the AsyncAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Auction } from '../../../src/db/entities/Auction.ts';
import { Holding } from '../../../src/db/entities/Holding.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { Sale } from '../../../src/db/entities/Sale.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { eventsFor, openSocket, subscribe, waitForId } from '../events/world.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
const QUIET = {
  MARKET_SWEEP_MS: '3600000',
  RATE_LIMIT_REQUESTS: '100000',
  RATE_LIMIT_USER_REQUESTS: '100000',
};

describe.each(DB_KINDS)('auctions on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let carol: HttpUser;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );
  const balance = async (asset: string, wallet: string) =>
    (await read(`/assets/${asset}/owners`)).data.find(
      (o: { wallet: string }) => o.wallet.toLowerCase() === wallet.toLowerCase(),
    )?.balance ?? '0';
  const reserved = async (asset: string, wallet: string) =>
    ((
      await orm()
        .em.fork()
        .findOne(Holding, { asset, wallet: wallet.toLowerCase() } as never)
    )?.reserved as bigint | undefined) ?? 0n;
  const owner = async (id: string) => (await read(`/assets/${id}`)).owner;
  const mintNft = async (to: string) => {
    const made = await call(studio, 'POST', '/api/v1/collections/hall/mint/batch', {
      items: [{ to, nft: { name: 'Relic', metadata } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const open = async (seller: HttpUser, assetId: string, body: Record<string, unknown> = {}) => {
    const created = await call(seller, 'POST', '/api/v1/auctions', {
      wallet: seller.wallet,
      assetId,
      currency: 'mark',
      reservePrice: '10',
      minIncrement: '2',
      duration: 3600,
      ...body,
    });
    expect(created.status, created.text).toBe(201);
    return created.body;
  };
  const bid = (bidder: HttpUser, id: string, amount: string, key?: string) =>
    call(bidder, 'POST', `/api/v1/auctions/${id}/bids`, { wallet: bidder.wallet, amount }, key);
  /** Alice moves the NFT to carol: it is free (not escrowed). */
  const giveToCarol = async (relic: string) => {
    const moved = await call(alice, 'POST', '/api/v1/transfer', {
      assetId: relic,
      from: alice.wallet,
      to: carol.wallet,
      amount: '1',
    });
    expect(moved.status, moved.text).toBe(201);
  };
  /** Time passing: the auction's end moved into the past. */
  const end = (id: string) =>
    orm()
      .em.fork()
      .nativeUpdate(Auction, { id }, { endsAt: new Date(Date.now() - 1000) });

  beforeAll(async () => {
    t = await startTestApp(kind, QUIET);
    [studio, alice, bob, carol] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
      httpUser(t),
    ]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'hall', name: 'Hall' })).status).toBe(
      201,
    );
    for (const [id, decimals] of [
      ['mark', 2],
      ['bead', 0],
    ] as const) {
      const created = await call(studio, 'POST', '/api/v1/currencies', {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals,
        collection: 'hall',
        metadata,
      });
      expect(created.status, created.text).toBe(201);
    }
    for (const user of [bob, carol])
      expect(
        (await call(studio, 'POST', '/api/v1/currencies/mark/mint', { to: user.wallet, amount: '1000' }))
          .status,
      ).toBe(201);
    const settings = await call(studio, 'PUT', '/api/v1/collections/hall/market/settings', {
      royaltyBps: 1000,
      currencies: ['mark'],
    });
    expect(settings.status, settings.text).toBe(200);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('escrows the item: it cannot move, be listed or auctioned again; refusals change nothing', async () => {
    const relic = await mintNft(alice.wallet);
    const listing = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: relic,
      currency: 'mark',
      price: '50',
    });
    expect(listing.status, listing.text).toBe(201);
    for (const [user, body, status, type] of [
      [alice, { assetId: 'mark' }, 400, '/problems/validation-failed'],
      [alice, { reservePrice: '0' }, 400, '/problems/invalid-amount'],
      [alice, { currency: 'bead' }, 409, '/problems/currency-not-accepted'],
      [bob, { wallet: alice.wallet }, 403, '/problems/wallet-not-controlled'],
      [bob, {}, 409, '/problems/insufficient-balance'],
    ] as const) {
      const refused = await call(user, 'POST', '/api/v1/auctions', {
        wallet: user.wallet,
        assetId: relic,
        currency: 'mark',
        reservePrice: '10',
        minIncrement: '2',
        duration: 3600,
        ...(body as Record<string, unknown>),
      });
      expect([refused.status, refused.body.type], refused.text).toEqual([status, type]);
    }
    const before = await lastEventId();
    const auction = await open(alice, relic);
    expect(auction).toMatchObject({
      status: 'open',
      seller: alice.wallet,
      assetId: relic,
      reservePrice: '10',
      minIncrement: '2',
      extensionSeconds: 300,
      bestBid: null,
      bids: 0,
    });
    expect(await reserved(relic, alice.wallet)).toBe(1n);
    expect(await owner(relic)).toBe(alice.wallet);
    expect(await read(`/api/v1/listings/${listing.body.id}`)).toMatchObject({
      status: 'ended',
      endReason: 'unavailable',
    });
    const events = await read(`/api/v1/events?after=${before}&limit=100`);
    expect(events.data.map((e: { type: string }) => e.type)).toEqual(['auctionCreated', 'listingEnded']);
    const moved = await call(alice, 'POST', '/api/v1/transfer', {
      assetId: relic,
      from: alice.wallet,
      to: bob.wallet,
      amount: '1',
    });
    expect([moved.status, moved.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const again = await call(alice, 'POST', '/api/v1/auctions', {
      wallet: alice.wallet,
      assetId: relic,
      currency: 'mark',
      reservePrice: '1',
      minIncrement: '1',
      duration: 60,
    });
    expect([again.status, again.body.type]).toEqual([409, '/problems/insufficient-balance']);
    expect(await read(`/api/v1/auctions/${auction.id}`)).toEqual(auction);
    expect((await read(`/api/v1/auctions?seller=${alice.wallet}&status=open`)).data).toContainEqual(auction);
  });

  it('bids reserve their amount, the previous best is refunded at once; the reserve, the increment, the seller, the balance', async () => {
    const auction = await open(alice, await mintNft(alice.wallet));
    const refusals = [
      [bob, '9.99', 409, '/problems/bid-too-low'],
      [alice, '20', 409, '/problems/own-auction'],
      [bob, '1000.01', 409, '/problems/insufficient-balance'],
      [bob, '0', 400, '/problems/invalid-amount'],
    ] as const;
    for (const [user, amount, status, type] of refusals) {
      const refused = await bid(user, auction.id, amount);
      expect([refused.status, refused.body.type], refused.text).toEqual([status, type]);
    }
    const first = await bid(bob, auction.id, '10', 'bid-1');
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({ bestBid: '10', bestBidder: bob.wallet, bids: 1 });
    const replay = await bid(bob, auction.id, '10', 'bid-1');
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(await reserved('mark', bob.wallet)).toBe(1000n);
    const low = await bid(carol, auction.id, '11.99');
    expect([low.status, low.body.type]).toEqual([409, '/problems/bid-too-low']);
    const outbid = await bid(carol, auction.id, '12');
    expect(outbid.status, outbid.text).toBe(201);
    expect(await reserved('mark', bob.wallet)).toBe(0n);
    expect(await reserved('mark', carol.wallet)).toBe(1200n);
    // Raising one's own best bid reserves the difference only.
    const raised = await bid(carol, auction.id, '14');
    expect(raised.status, raised.text).toBe(201);
    expect(await reserved('mark', carol.wallet)).toBe(1400n);
    expect(await balance('mark', carol.wallet)).toBe('1000');
    // Two bids of the same amount at once: one is the best, the other finds it too low.
    const racing = await Promise.all([bid(bob, auction.id, '20'), bid(carol, auction.id, '20')]);
    expect(racing.map((r) => r.status).sort(), racing.map((r) => r.text).join('\n')).toEqual([201, 409]);
    expect(racing.find((r) => r.status === 409)?.body.type).toBe('/problems/bid-too-low');
    const best = await read(`/api/v1/auctions/${auction.id}`);
    expect(best).toMatchObject({ bestBid: '20', bids: 4 });
    const winner = best.bestBidder === bob.wallet ? bob : carol;
    const loser = winner === bob ? carol : bob;
    expect(await reserved('mark', winner.wallet)).toBe(2000n);
    expect(await reserved('mark', loser.wallet)).toBe(0n);
  });

  it('a bid near the end extends it; after the end no bid lands, and the keeper settles it once: item, exact split, sale', async () => {
    const relic = await mintNft(alice.wallet);
    const auction = await open(alice, relic, { duration: 60, extension: 600 });
    const late = await bid(bob, auction.id, '99.99');
    expect(late.status, late.text).toBe(201);
    expect(new Date(late.body.endsAt).getTime()).toBeGreaterThan(new Date(auction.endsAt).getTime());
    await end(auction.id);
    const tooLate = await bid(carol, auction.id, '200');
    expect([tooLate.status, tooLate.body.type]).toEqual([409, '/problems/auction-not-open']);
    const before = {
      alice: await balance('mark', alice.wallet),
      bob: await balance('mark', bob.wallet),
      studio: await balance('mark', studio.wallet),
      // Bob may hold the best bid of another auction still open.
      reserved: await reserved('mark', bob.wallet),
    };
    const after = await lastEventId();
    const sweeps = await Promise.all([t.app.marketKeeper.sweep(), t.app.marketKeeper.sweep()]);
    expect(sweeps.reduce((n, s) => n + s.auctionsSettled, 0)).toBe(1);
    const settled = await read(`/api/v1/auctions/${auction.id}`);
    expect(settled).toMatchObject({ status: 'sold', bestBid: '99.99', bestBidder: bob.wallet });
    expect(await owner(relic)).toBe(bob.wallet);
    const cents = (text: string) => Math.round(Number(text) * 100);
    // 9999 base units: royalty 10 % = 999, no fee, seller 9000.
    expect(cents(await balance('mark', alice.wallet))).toBe(cents(before.alice) + 9000);
    expect(cents(await balance('mark', bob.wallet))).toBe(cents(before.bob) - 9999);
    expect(cents(await balance('mark', studio.wallet))).toBe(cents(before.studio) + 999);
    expect(await reserved('mark', bob.wallet)).toBe(before.reserved - 9999n);
    expect(await reserved(relic, alice.wallet)).toBe(0n);
    const [sale] = (await read(`/api/v1/sales?assetId=${relic}`)).data;
    expect(sale).toMatchObject({
      id: settled.operationId,
      listingId: null,
      offerId: null,
      auctionId: auction.id,
      price: '99.99',
      royalty: '9.99',
      fee: '0',
      sellerProceeds: '90',
    });
    const events = await read(`/api/v1/events?after=${after}&limit=100`);
    expect(events.data.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'auctionEnded',
      'sale',
      'priceUpdate',
    ]);
    expect(new Set(events.data.map((e: { operationId?: string }) => e.operationId))).toEqual(
      new Set([settled.operationId]),
    );
    expect(events.data[3].data).toEqual(settled);
    expect((await t.app.marketKeeper.sweep()).auctionsSettled).toBe(0);
  });

  it('an auction without a bid ends unsold: the item is released to its seller', async () => {
    const relic = await mintNft(alice.wallet);
    const auction = await open(alice, relic);
    await end(auction.id);
    expect((await t.app.marketKeeper.sweep()).auctionsSettled).toBe(1);
    expect(await read(`/api/v1/auctions/${auction.id}`)).toMatchObject({ status: 'unsold', bestBid: null });
    expect(await reserved(relic, alice.wallet)).toBe(0n);
    await giveToCarol(relic);
  });

  it('its seller cancels it before any bid: the item released, `auctionEnded` (cancelled), once; not another user, not after a bid or the end', async () => {
    const relic = await mintNft(alice.wallet);
    const auction = await open(alice, relic);
    const cancel = (user: HttpUser, id: string) => call(user, 'POST', `/api/v1/auctions/${id}/cancel`);
    // Another user: refused, nothing changes, and nothing of it reaches that user's wallet stream.
    const stranger = await cancel(bob, auction.id);
    expect([stranger.status, stranger.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const unknown = await cancel(alice, 'auc_01JD3ZJ4M6P8R0T2V4X6Z8B0C2');
    expect([unknown.status, unknown.body.type]).toEqual([404, '/problems/not-found']);
    expect(await read(`/api/v1/auctions/${auction.id}`)).toEqual(auction);
    expect(await reserved(relic, alice.wallet)).toBe(1n);
    const before = await lastEventId();
    const cancelled = await cancel(alice, auction.id);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ id: auction.id, status: 'cancelled', bestBid: null, bids: 0 });
    expect(cancelled.body.operationId).toMatch(/^op_/);
    expect(await read(`/api/v1/auctions/${auction.id}`)).toEqual(cancelled.body);
    expect(await reserved(relic, alice.wallet)).toBe(0n);
    const events = await read(`/api/v1/events?after=${before}&limit=100`);
    expect(events.data.map((e: { type: string }) => e.type)).toEqual(['auctionEnded']);
    expect(events.data[0]).toMatchObject({ operationId: cancelled.body.operationId, data: cancelled.body });
    const bobs = await read(`/api/v1/events?after=${before}&limit=100&walletId=${bob.wallet}`);
    expect(bobs.data).toEqual([]);
    // Closed: no second cancellation, no bid, no settlement; the item is free again.
    for (const refused of [await cancel(alice, auction.id), await bid(bob, auction.id, '10')])
      expect([refused.status, refused.body.type]).toEqual([409, '/problems/auction-not-open']);
    await end(auction.id);
    expect((await t.app.marketKeeper.sweep()).auctionsSettled).toBe(0);
    expect(
      (await read(`/api/v1/auctions?seller=${alice.wallet}&status=cancelled`)).data.map(
        (a: { id: string }) => a.id,
      ),
    ).toContain(auction.id);
    await giveToCarol(relic);

    // After a bid: refused, the bid stays reserved and the auction runs to its end.
    const bidOn = await open(carol, relic);
    const bobBefore = await reserved('mark', bob.wallet);
    expect((await bid(bob, bidOn.id, '10')).status).toBe(201);
    const hasBids = await cancel(carol, bidOn.id);
    expect([hasBids.status, hasBids.body.type]).toEqual([409, '/problems/auction-has-bids']);
    expect(await read(`/api/v1/auctions/${bidOn.id}`)).toMatchObject({ status: 'open', bestBid: '10' });
    expect(await reserved('mark', bob.wallet)).toBe(bobBefore + 1000n);
    await end(bidOn.id);
    expect((await t.app.marketKeeper.sweep()).auctionsSettled).toBe(1);
    expect(await owner(relic)).toBe(bob.wallet);

    // After its end, even without a bid: refused (the keeper ends it unsold).
    const ended = await open(alice, await mintNft(alice.wallet));
    await end(ended.id);
    const late = await cancel(alice, ended.id);
    expect([late.status, late.body.type]).toEqual([409, '/problems/auction-not-open']);
    expect((await t.app.marketKeeper.sweep()).auctionsSettled).toBe(1);
    expect(await read(`/api/v1/auctions/${ended.id}`)).toMatchObject({ status: 'unsold' });
  });

  it('a cancellation and a first bid racing: exactly one applies, the other is refused cleanly', async () => {
    for (let round = 0; round < 4; round++) {
      const relic = await mintNft(alice.wallet);
      const auction = await open(alice, relic);
      const bobBefore = await reserved('mark', bob.wallet);
      const [cancelled, placed] = await Promise.all([
        call(alice, 'POST', `/api/v1/auctions/${auction.id}/cancel`),
        bid(bob, auction.id, '10'),
      ]);
      const statuses = [cancelled.status, placed.status];
      expect(
        statuses.filter((s) => s < 300),
        `${cancelled.text}\n${placed.text}`,
      ).toHaveLength(1);
      const now = await read(`/api/v1/auctions/${auction.id}`);
      if (cancelled.status === 200) {
        expect([placed.status, placed.body.type]).toEqual([409, '/problems/auction-not-open']);
        expect(now).toMatchObject({ status: 'cancelled', bids: 0 });
        expect(await reserved('mark', bob.wallet)).toBe(bobBefore);
        expect(await reserved(relic, alice.wallet)).toBe(0n);
      } else {
        expect([cancelled.status, cancelled.body.type]).toEqual([409, '/problems/auction-has-bids']);
        expect(now).toMatchObject({ status: 'open', bids: 1 });
        expect(await reserved('mark', bob.wallet)).toBe(bobBefore + 1000n);
        await end(auction.id);
        expect((await t.app.marketKeeper.sweep()).auctionsSettled).toBe(1);
      }
    }
  });

  it('auction events reach /ws, filtered by the bidder’s wallet, each checked against the AsyncAPI document', async () => {
    const socket = await openSocket(t, carol);
    try {
      const { subscriptionId } = await subscribe(socket, { walletId: carol.wallet });
      const auction = await open(alice, await mintNft(alice.wallet));
      expect((await bid(carol, auction.id, '10')).status).toBe(201);
      expect((await bid(bob, auction.id, '12')).status).toBe(201);
      await end(auction.id);
      await t.app.marketKeeper.sweep();
      const last = (await read('/api/v1/events?after=0&limit=1000')).data.at(-1);
      await waitForId(socket, subscriptionId, last.id);
      const seen = eventsFor(socket, subscriptionId).filter((m) => m.data?.id === auction.id);
      // Carol's bid, and the bid that outbid her (it names her as the refunded bidder); not the end.
      expect(seen.map((m) => m.type)).toEqual(['auctionBid', 'auctionBid']);
      expect(seen[1].data).toMatchObject({ bestBidder: bob.wallet, bestBid: '12' });
    } finally {
      socket.close();
    }
  });

  if (kind === 'postgres') {
    it('two instances on one database settle an ended auction once; a restarted instance settles one that ended meanwhile', async () => {
      const second = await startTestApp(kind, QUIET, { databaseUrl: t.app.config.databaseUrl });
      try {
        const auctions = [];
        for (let i = 0; i < 3; i++) {
          const auction = await open(alice, await mintNft(alice.wallet));
          expect((await bid(bob, auction.id, '10')).status).toBe(201);
          await end(auction.id);
          auctions.push(auction.id);
        }
        const sweeps = await Promise.all([
          t.app.marketKeeper.sweep(),
          second.app.marketKeeper.sweep(),
          t.app.marketKeeper.sweep(),
          second.app.marketKeeper.sweep(),
        ]);
        expect(sweeps.reduce((n, s) => n + s.auctionsSettled, 0)).toBe(3);
        for (const id of auctions) {
          expect(await orm().em.fork().count(Sale, { listingId: id })).toBe(1);
          const ended = (await orm().em.fork().find(OutboxEvent, { type: 'auctionEnded' })).filter(
            (e) => (e.data as { id: string }).id === id,
          );
          expect(ended).toHaveLength(1);
        }
      } finally {
        await second.close();
      }
      // An auction that ends while no instance runs its loop is settled by the next one to start.
      const pending = await open(alice, await mintNft(alice.wallet));
      expect((await bid(carol, pending.id, '10')).status).toBe(201);
      await end(pending.id);
      const restarted = await startTestApp(
        kind,
        { ...QUIET, MARKET_SWEEP_MS: '200' },
        {
          databaseUrl: t.app.config.databaseUrl,
        },
      );
      try {
        const deadline = Date.now() + 10_000;
        let status = 'open';
        while (status === 'open' && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          status = (await orm().em.fork().findOneOrFail(Auction, { id: pending.id })).status;
        }
        expect(status).toBe('sold');
      } finally {
        await restarted.close();
      }
      // Three apps start in this test (two instances, then a restart): more than the suite's 30 s
      // on a loaded machine (it timed out once at load 13).
    }, 90_000);
  }
});

// Issue 35: the market keeper (src/domain/ledger/market-keeper.ts) ends listings and offers past their
// expiry, each in its own guarded plan with its event, exactly once: two sweeps at once on one
// instance, and on PostgreSQL two instances on one database sweeping together, end each row once
// (one row change, one event, one release of an offer's price). The loop runs by itself on every
// instance (MARKET_SWEEP_MS). Every response is checked against the contract by the test client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Holding } from '../../../src/db/entities/Holding.ts';
import { Listing } from '../../../src/db/entities/Listing.ts';
import { Offer } from '../../../src/db/entities/Offer.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
/** Long enough that only the test's own sweeps run, except where the loop is the subject. */
const QUIET = {
  MARKET_SWEEP_MS: '3600000',
  RATE_LIMIT_REQUESTS: '100000',
  RATE_LIMIT_USER_REQUESTS: '100000',
};

describe.each(DB_KINDS)('the market sweep on %s', (kind) => {
  let t: TestApp;
  let second: TestApp | undefined;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read } = economyHttp(
    () => t,
    () => alice,
  );
  const reserved = async (wallet: string) =>
    ((
      await orm()
        .em.fork()
        .findOne(Holding, { asset: 'pearl', wallet: wallet.toLowerCase() } as never)
    )?.reserved as bigint | undefined) ?? 0n;
  const endEvents = async (type: 'listingEnded' | 'offerEnded', id: string) =>
    (await orm().em.fork().find(OutboxEvent, { type })).filter((e) => (e.data as { id: string }).id === id);

  /** A listing and an offer, each with an expiry, then put in the past (as time would). */
  async function expiring() {
    const made = await call(studio, 'POST', '/api/v1/collections/tide/mint/batch', {
      items: [{ to: alice.wallet, nft: { name: 'Shell', metadata } }],
    });
    expect(made.status, made.text).toBe(201);
    const nft = made.body.nfts[0].id as string;
    const listing = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: nft,
      currency: 'pearl',
      price: '5',
      expiresIn: 60,
    });
    expect(listing.status, listing.text).toBe(201);
    const offer = await call(bob, 'POST', '/api/v1/offers', {
      wallet: bob.wallet,
      assetId: nft,
      currency: 'pearl',
      price: '4',
      expiresIn: 60,
    });
    expect(offer.status, offer.text).toBe(201);
    const past = new Date(Date.now() - 1000);
    await orm().em.fork().nativeUpdate(Listing, { id: listing.body.id }, { expiresAt: past });
    await orm().em.fork().nativeUpdate(Offer, { id: offer.body.id }, { expiresAt: past });
    return { listing: listing.body.id as string, offer: offer.body.id as string };
  }

  async function expectEndedOnce(ids: { listing: string; offer: string }) {
    expect(await read(`/api/v1/listings/${ids.listing}`)).toMatchObject({
      status: 'expired',
      endReason: null,
    });
    expect(await read(`/api/v1/offers/${ids.offer}`)).toMatchObject({ status: 'expired' });
    const listingEnded = await endEvents('listingEnded', ids.listing);
    const offerEnded = await endEvents('offerEnded', ids.offer);
    expect([listingEnded.length, offerEnded.length]).toEqual([1, 1]);
    expect(listingEnded[0].data).toMatchObject({ status: 'expired' });
    expect(offerEnded[0].data).toMatchObject({ status: 'expired' });
    expect(await reserved(bob.wallet)).toBe(0n);
  }

  beforeAll(async () => {
    t = await startTestApp(kind, QUIET);
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'tide', name: 'Tide' })).status).toBe(
      201,
    );
    const currency = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'pearl',
      name: 'Pearl',
      symbol: 'PRL',
      decimals: 0,
      collection: 'tide',
      metadata,
    });
    expect(currency.status, currency.text).toBe(201);
    const minted = await call(studio, 'POST', '/api/v1/currencies/pearl/mint', {
      to: bob.wallet,
      amount: '1000',
    });
    expect(minted.status, minted.text).toBe(201);
  });

  afterAll(async () => {
    await second?.close();
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('ends expired listings and offers in their own plans with their events, once, however many sweep', async () => {
    const ids = await expiring();
    expect(await reserved(bob.wallet)).toBe(4n);
    const sweeps = await Promise.all([t.app.marketKeeper.sweep(), t.app.marketKeeper.sweep()]);
    expect(sweeps.reduce((n, s) => n + s.listingsExpired, 0)).toBe(1);
    expect(sweeps.reduce((n, s) => n + s.offersExpired, 0)).toBe(1);
    await expectEndedOnce(ids);
    // Once ended, it stays so: a later sweep finds nothing; cancelling is refused.
    expect(await t.app.marketKeeper.sweep()).toEqual({
      listingsExpired: 0,
      offersExpired: 0,
      auctionsSettled: 0,
      itemsExpired: 0,
    });
    const cancel = await call(bob, 'POST', `/api/v1/offers/${ids.offer}/cancel`);
    expect([cancel.status, cancel.body.type]).toEqual([409, '/problems/offer-not-open']);
    // A listing or offer not yet expired is left alone.
    const open = await call(bob, 'POST', '/api/v1/offers', {
      wallet: bob.wallet,
      collection: 'tide',
      currency: 'pearl',
      price: '1',
      expiresIn: 60,
    });
    expect(open.status, open.text).toBe(201);
    expect(await t.app.marketKeeper.sweep()).toEqual({
      listingsExpired: 0,
      offersExpired: 0,
      auctionsSettled: 0,
      itemsExpired: 0,
    });
    expect(await read(`/api/v1/offers/${open.body.id}`)).toMatchObject({ status: 'open' });
    expect((await call(bob, 'POST', `/api/v1/offers/${open.body.id}/cancel`)).status).toBe(200);
  });

  it('the loop runs by itself on every instance', async () => {
    const looping = await startTestApp(kind, { ...QUIET, MARKET_SWEEP_MS: '200' });
    try {
      const [seller, bidder] = await Promise.all([httpUser(looping), httpUser(looping)]);
      const own = (user: HttpUser, method: string, path: string, body?: unknown) =>
        looping.http(method, path, { body, headers: user.headers });
      const boss = await httpUser(looping, 'studio');
      expect((await own(boss, 'POST', '/api/v1/collections', { id: 'reef', name: 'Reef' })).status).toBe(201);
      const made = await own(boss, 'POST', '/api/v1/collections/reef/mint/batch', {
        items: [{ to: seller.wallet, nft: { name: 'Coral', metadata } }],
      });
      expect(made.status, made.text).toBe(201);
      const coin = await own(boss, 'POST', '/api/v1/currencies', {
        id: 'sand',
        name: 'Sand',
        symbol: 'SND',
        decimals: 0,
        collection: 'reef',
        metadata,
      });
      expect(coin.status, coin.text).toBe(201);
      expect(
        (await own(boss, 'POST', '/api/v1/currencies/sand/mint', { to: bidder.wallet, amount: '9' })).status,
      ).toBe(201);
      const listing = await own(seller, 'POST', '/api/v1/listings', {
        wallet: seller.wallet,
        assetId: made.body.nfts[0].id,
        currency: 'sand',
        price: '3',
        expiresIn: 60,
      });
      expect(listing.status, listing.text).toBe(201);
      await (looping.app.orm as unknown as Orm).em
        .fork()
        .nativeUpdate(Listing, { id: listing.body.id }, { expiresAt: new Date(Date.now() - 1000) });
      const deadline = Date.now() + 10_000;
      let status = 'active';
      while (status !== 'expired' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (
          await (looping.app.orm as unknown as Orm).em.fork().findOneOrFail(Listing, { id: listing.body.id })
        ).status;
      }
      expect(status).toBe('expired');
    } finally {
      await looping.close();
    }
  });

  if (kind === 'postgres') {
    it('two instances on one database sweeping together end each row once', async () => {
      second = await startTestApp(kind, QUIET, { databaseUrl: t.app.config.databaseUrl });
      const rows = [await expiring(), await expiring(), await expiring()];
      const sweeps = await Promise.all([
        t.app.marketKeeper.sweep(),
        second.app.marketKeeper.sweep(),
        t.app.marketKeeper.sweep(),
        second.app.marketKeeper.sweep(),
      ]);
      expect(sweeps.reduce((n, s) => n + s.listingsExpired, 0)).toBe(3);
      expect(sweeps.reduce((n, s) => n + s.offersExpired, 0)).toBe(3);
      for (const ids of rows) await expectEndedOnce(ids);
    });
  }
});

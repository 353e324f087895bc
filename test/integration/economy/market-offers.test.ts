// Issue 35: marketplace offers through the real app over HTTP, on both databases: an offer reserves
// its price (the balance stays whole, the free part shrinks: a transfer, a second offer or a listing
// purchase cannot spend it), every refusal at creation, acceptance as one operation settled like a
// purchase (item to the bidder, seller + royalty + fee == price paid from the reservation, the sale,
// the market price, the item's listing ended, every event under one op id, replay), collection
// offers (any holder, any item of the collection), who may accept and cancel, racing acceptances and
// a cancellation (exactly one applies, the offer pays once), expiry, trait offers (made, refused,
// accepted with a matching item only, counted in an item's best offer), and the events on /ws checked
// against the AsyncAPI document. Every response is checked against the contract by the test client;
// the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Holding } from '../../../src/db/entities/Holding.ts';
import { Offer } from '../../../src/db/entities/Offer.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { eventsFor, openSocket, subscribe, waitForId } from '../events/world.ts';

const metadata = {
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'rarity', value: 'rare' }],
  creator: 'Example Studio',
};
const FEE_WALLET = '0x00000000000000000000000000000000000Fee02';

describe.each(DB_KINDS)('marketplace offers on %s', (kind) => {
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
  const sword = async (to: string, collection = 'keep') => {
    const made = await call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
      items: [{ to, nft: { name: 'Sword', metadata } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  /** An NFT with these attributes (trait offers). */
  const charm = async (
    to: string,
    attributes: { trait_type: string; value: unknown }[],
    collection = 'keep',
  ) => {
    const made = await call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
      items: [{ to, nft: { name: 'Charm', metadata: { ...metadata, attributes } } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const offer = async (bidder: HttpUser, body: Record<string, unknown>, key?: string) => {
    const made = await call(
      bidder,
      'POST',
      '/api/v1/offers',
      { wallet: bidder.wallet, currency: 'coin', ...body },
      key,
    );
    expect(made.status, made.text).toBe(201);
    return made.body;
  };
  const accept = (holder: HttpUser, id: string, body: Record<string, unknown> = {}, key?: string) =>
    call(holder, 'POST', `/api/v1/offers/${id}/accept`, { wallet: holder.wallet, ...body }, key);
  const eventsAfter = async (after: string) => (await read(`/api/v1/events?after=${after}&limit=100`)).data;

  beforeAll(async () => {
    t = await startTestApp(kind, {
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
      MARKET_FEE_BPS: '250',
      MARKET_FEE_WALLET: FEE_WALLET,
      // Tests here move an offer's expiry into the past and then read it still open (the sweep's
      // own tests are in market-sweep.test.ts): a sweep in between released one once (CI load).
      MARKET_SWEEP_MS: '3600000',
    });
    [studio, alice, bob, carol] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
      httpUser(t),
    ]);
    for (const body of [
      { id: 'keep', name: 'Keep' },
      { id: 'other', name: 'Other' },
      { id: 'shut', name: 'Shut' },
    ])
      expect((await call(studio, 'POST', '/api/v1/collections', body)).status).toBe(201);
    for (const [id, decimals] of [
      ['coin', 2],
      ['shell', 0],
    ] as const) {
      const created = await call(studio, 'POST', '/api/v1/currencies', {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals,
        collection: 'keep',
        metadata,
      });
      expect(created.status, created.text).toBe(201);
    }
    for (const user of [bob, carol]) {
      const minted = await call(studio, 'POST', '/api/v1/currencies/coin/mint', {
        to: user.wallet,
        amount: '1000',
      });
      expect(minted.status, minted.text).toBe(201);
    }
    const settings = await call(studio, 'PUT', '/api/v1/collections/keep/market/settings', {
      royaltyBps: 500,
      currencies: ['coin'],
    });
    expect(settings.status, settings.text).toBe(200);
    expect(
      (await call(studio, 'PUT', '/api/v1/collections/shut/market/settings', { tradingEnabled: false }))
        .status,
    ).toBe(200);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('an offer reserves its price: the balance stays whole, the free part cannot be spent, offered or paid', async () => {
    const swordId = await sword(alice.wallet);
    const before = await lastEventId();
    const made = await call(
      bob,
      'POST',
      '/api/v1/offers',
      { wallet: bob.wallet, assetId: swordId, currency: 'coin', price: '900' },
      'o1',
    );
    expect(made.status, made.text).toBe(201);
    expect(made.headers.get('location')).toBe(`/api/v1/offers/${made.body.id}`);
    expect(made.body).toMatchObject({
      status: 'open',
      bidder: bob.wallet,
      assetId: swordId,
      collection: 'keep',
      currency: 'coin',
      price: '900',
      operationId: null,
      soldAssetId: null,
    });
    const replay = await call(
      bob,
      'POST',
      '/api/v1/offers',
      { wallet: bob.wallet, assetId: swordId, currency: 'coin', price: '900' },
      'o1',
    );
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body]).toEqual([
      201,
      'true',
      made.body,
    ]);
    expect(await balance('coin', bob.wallet)).toBe('1000');
    expect(await reserved('coin', bob.wallet)).toBe(90000n);
    // 100 free: a transfer of 101, a second offer of 101, are refused; 100 is not.
    const transfer = await call(bob, 'POST', '/api/v1/transfer', {
      assetId: 'coin',
      from: bob.wallet,
      to: carol.wallet,
      amount: '100.01',
    });
    expect([transfer.status, transfer.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const second = await call(bob, 'POST', '/api/v1/offers', {
      wallet: bob.wallet,
      collection: 'keep',
      currency: 'coin',
      price: '100.01',
    });
    expect([second.status, second.body.type]).toEqual([409, '/problems/insufficient-balance']);
    // A listing bought with the reserved coins is refused too.
    const listed = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: await sword(alice.wallet),
      currency: 'coin',
      price: '150',
    });
    expect(listed.status, listed.text).toBe(201);
    const bought = await call(bob, 'POST', `/api/v1/listings/${listed.body.id}/buy`, { wallet: bob.wallet });
    expect([bought.status, bought.body.type]).toEqual([409, '/problems/insufficient-balance']);
    expect(await balance('coin', bob.wallet)).toBe('1000');

    expect(await read(`/api/v1/offers/${made.body.id}`)).toEqual(made.body);
    const mine = await read(`/api/v1/offers?bidder=${bob.wallet}&status=open&assetId=${swordId}`);
    expect(mine.data).toEqual([made.body]);
    const events = await eventsAfter(before);
    expect(events.map((e: { type: string }) => e.type)).toEqual(['offerCreated', 'newNFT', 'listingCreated']);
    expect(events[0].data).toEqual(made.body);

    const cancelled = await call(bob, 'POST', `/api/v1/offers/${made.body.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    expect(await reserved('coin', bob.wallet)).toBe(0n);
    const again = await call(bob, 'POST', `/api/v1/offers/${made.body.id}/cancel`);
    expect([again.status, again.body.type]).toEqual([409, '/problems/offer-not-open']);
  });

  it('refuses what cannot be offered, and reserves nothing', async () => {
    const swordId = await sword(alice.wallet);
    const shut = await sword(alice.wallet, 'shut');
    const cases: [HttpUser, Record<string, unknown>, number, string][] = [
      [bob, { assetId: swordId, collection: 'keep', price: '1' }, 400, '/problems/validation-failed'],
      [bob, { price: '1' }, 400, '/problems/validation-failed'],
      [bob, { assetId: 'coin', price: '1' }, 400, '/problems/validation-failed'],
      [bob, { assetId: swordId, price: '0' }, 400, '/problems/invalid-amount'],
      [bob, { assetId: swordId, price: '1.001' }, 400, '/problems/invalid-amount'],
      [bob, { assetId: 'nft_01JD3Z6W8Q5N2M7K4R9T1V0XYZ', price: '1' }, 404, '/problems/not-found'],
      [bob, { collection: 'nowhere', price: '1' }, 404, '/problems/not-found'],
      [bob, { assetId: swordId, price: '1', currency: 'shell' }, 409, '/problems/currency-not-accepted'],
      [bob, { assetId: shut, price: '1' }, 409, '/problems/trading-disabled'],
      [bob, { assetId: swordId, price: '1000.01' }, 409, '/problems/insufficient-balance'],
      [alice, { assetId: swordId, price: '1' }, 409, '/problems/own-offer'],
      [carol, { assetId: swordId, price: '1', wallet: bob.wallet }, 403, '/problems/wallet-not-controlled'],
    ];
    for (const [user, body, status, type] of cases) {
      const answer = await call(user, 'POST', '/api/v1/offers', {
        wallet: user.wallet,
        currency: 'coin',
        ...body,
      });
      expect([answer.status, answer.body.type], `${JSON.stringify(body)}: ${answer.text}`).toEqual([
        status,
        type,
      ]);
    }
    expect(await reserved('coin', bob.wallet)).toBe(0n);
    expect(await orm().em.fork().count(Offer, { status: 'open' })).toBe(0);
  });

  it('the holder accepts an item offer in one operation: item, seller + royalty + fee == price from the reservation, the sale, one op id, replay', async () => {
    const swordId = await sword(alice.wallet);
    const listing = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: swordId,
      currency: 'coin',
      price: '500',
    });
    expect(listing.status, listing.text).toBe(201);
    const made = await offer(carol, { assetId: swordId, price: '99.99' });
    const before = {
      alice: await balance('coin', alice.wallet),
      carol: await balance('coin', carol.wallet),
      studio: await balance('coin', studio.wallet),
      fee: await balance('coin', FEE_WALLET),
    };
    const after = await lastEventId();
    const accepted = await accept(alice, made.id, {}, 'a1');
    expect(accepted.status, accepted.text).toBe(201);
    const { sale } = accepted.body;
    // 9999 base units: royalty 5 % = 499, fee 2.5 % = 249, seller 9251.
    expect(sale).toMatchObject({
      listingId: null,
      offerId: made.id,
      assetId: swordId,
      price: '99.99',
      royalty: '4.99',
      fee: '2.49',
      sellerProceeds: '92.51',
      seller: alice.wallet,
      buyer: carol.wallet,
    });
    expect(accepted.body.offer).toMatchObject({
      id: made.id,
      status: 'accepted',
      operationId: accepted.body.id,
      soldAssetId: swordId,
    });
    expect(
      accepted.body.transfers.map((x: { assetId: string; amount: string }) => [x.assetId, x.amount]),
    ).toEqual([
      [swordId, '1'],
      ['coin', '92.51'],
      ['coin', '4.99'],
      ['coin', '2.49'],
    ]);
    expect(await owner(swordId)).toBe(carol.wallet);
    const cents = (text: string) => Math.round(Number(text) * 100);
    expect(cents(await balance('coin', alice.wallet))).toBe(cents(before.alice) + 9251);
    expect(cents(await balance('coin', carol.wallet))).toBe(cents(before.carol) - 9999);
    expect(cents(await balance('coin', studio.wallet))).toBe(cents(before.studio) + 499);
    expect(cents(await balance('coin', FEE_WALLET))).toBe(cents(before.fee) + 249);
    expect(await reserved('coin', carol.wallet)).toBe(0n);
    // The item's listing ended in the same operation.
    expect(await read(`/api/v1/listings/${listing.body.id}`)).toMatchObject({
      status: 'ended',
      endReason: 'moved',
    });

    const events = await eventsAfter(after);
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'offerEnded',
      'sale',
      'priceUpdate',
      'listingEnded',
    ]);
    expect(new Set(events.map((e: { operationId?: string }) => e.operationId))).toEqual(
      new Set([accepted.body.id]),
    );
    expect(events[4].data).toEqual(accepted.body.offer);
    expect(events[5].data).toEqual(sale);

    const replay = await accept(alice, made.id, {}, 'a1');
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body]).toEqual([
      201,
      'true',
      accepted.body,
    ]);
    const twice = await accept(carol, made.id);
    expect([twice.status, twice.body.type]).toEqual([409, '/problems/offer-not-open']);
    expect((await read(`/api/v1/sales?assetId=${swordId}`)).data).toEqual([sale]);
    expect(await read(`/api/v1/price/${swordId}?currency=coin`)).toMatchObject({
      price: '99.99',
      source: 'market',
    });
  });

  it('a collection offer is accepted by any holder with any item of the collection, once', async () => {
    const made = await offer(bob, { collection: 'keep', price: '10' });
    expect(made.assetId).toBeNull();
    const first = await sword(alice.wallet);
    const second = await sword(carol.wallet);
    const foreign = await sword(alice.wallet, 'other');
    const missing = await accept(alice, made.id);
    expect([missing.status, missing.body.errors?.[0]?.pointer]).toEqual([400, '/body/assetId']);
    const outside = await accept(alice, made.id, { assetId: foreign });
    expect([outside.status, outside.body.type]).toEqual([409, '/problems/offer-item-mismatch']);
    const notHeld = await accept(alice, made.id, { assetId: second });
    expect([notHeld.status, notHeld.body.type]).toEqual([409, '/problems/insufficient-balance']);
    expect(await read(`/api/v1/offers?collection=keep&status=open`)).toMatchObject({
      data: expect.arrayContaining([made]),
    });
    // Two holders at once: exactly one sells, the reservation pays once.
    const answers = await Promise.all([
      accept(alice, made.id, { assetId: first }),
      accept(carol, made.id, { assetId: second }),
    ]);
    expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join('\n')).toEqual([201, 409]);
    expect(answers.find((a) => a.status === 409)?.body.type).toBe('/problems/offer-not-open');
    const won = answers.find((a) => a.status === 201)?.body;
    expect(await owner(won.offer.soldAssetId)).toBe(bob.wallet);
    expect(await reserved('coin', bob.wallet)).toBe(0n);
    const sales = (await read('/api/v1/sales?collection=keep&limit=100')).data.filter(
      (s: { offerId: string | null }) => s.offerId === made.id,
    );
    expect(sales).toHaveLength(1);
  });

  it('only the item’s wallet controller accepts, only the bidder cancels, no one accepts their own offer', async () => {
    const swordId = await sword(alice.wallet);
    const made = await offer(bob, { assetId: swordId, price: '5' });
    const otherItem = await sword(alice.wallet);
    const wrongItem = await accept(alice, made.id, { assetId: otherItem });
    expect([wrongItem.status, wrongItem.body.type]).toEqual([409, '/problems/offer-item-mismatch']);
    const notMine = await call(carol, 'POST', `/api/v1/offers/${made.id}/accept`, { wallet: alice.wallet });
    expect([notMine.status, notMine.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const notHeld = await accept(carol, made.id);
    expect([notHeld.status, notHeld.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const own = await accept(bob, made.id);
    expect([own.status, own.body.type]).toEqual([409, '/problems/own-offer']);
    const cancel = await call(alice, 'POST', `/api/v1/offers/${made.id}/cancel`);
    expect([cancel.status, cancel.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const unknown = await call(bob, 'POST', '/api/v1/offers/ofr_01JD3ZH2K4M6P8R0T2V4X6Z8B0/cancel');
    expect(unknown.status).toBe(404);
    expect(await read(`/api/v1/offers/${made.id}`)).toMatchObject({ status: 'open' });
    expect(await owner(swordId)).toBe(alice.wallet);
    // An acceptance and a cancellation racing: exactly one applies.
    const [accepted, cancelled] = await Promise.all([
      accept(alice, made.id),
      call(bob, 'POST', `/api/v1/offers/${made.id}/cancel`),
    ]);
    const won = accepted.status === 201;
    expect([accepted.status, cancelled.status], `${accepted.text}\n${cancelled.text}`).toEqual(
      won ? [201, 409] : [409, 200],
    );
    expect((won ? cancelled : accepted).body.type).toBe('/problems/offer-not-open');
    const final = await read(`/api/v1/offers/${made.id}`);
    expect(final.status).toBe(won ? 'accepted' : 'cancelled');
    expect(await owner(swordId)).toBe(won ? bob.wallet : alice.wallet);
    expect(await reserved('coin', bob.wallet)).toBe(0n);
  });

  it('an expired offer cannot be accepted; its bidder cancels it to release the price', async () => {
    const swordId = await sword(alice.wallet);
    const made = await offer(carol, { assetId: swordId, price: '7', expiresIn: 60 });
    expect(made.expiresAt).not.toBeNull();
    await orm()
      .em.fork()
      .nativeUpdate(Offer, { id: made.id }, { expiresAt: new Date(Date.now() - 1000) });
    expect(await read(`/api/v1/offers/${made.id}`)).toMatchObject({ status: 'expired' });
    expect(
      (await read(`/api/v1/offers?status=expired&bidder=${carol.wallet}`)).data.map(
        (o: { id: string }) => o.id,
      ),
    ).toContain(made.id);
    const late = await accept(alice, made.id);
    expect([late.status, late.body.type]).toEqual([409, '/problems/offer-not-open']);
    expect(late.body.detail).toContain('expired');
    expect(await reserved('coin', carol.wallet)).toBe(700n);
    const cancelled = await call(carol, 'POST', `/api/v1/offers/${made.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(await reserved('coin', carol.wallet)).toBe(0n);
  });

  it('the market figures name the best offer: a collection’s best collection offer, an item’s best of its own and its collection’s; closed and expired offers skipped', async () => {
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'best', name: 'Best' })).status).toBe(
      201,
    );
    const item = await sword(alice.wallet, 'best');
    const other = await sword(alice.wallet, 'best');
    const collectionMarket = (currency = 'coin') =>
      read(`/api/v1/collections/best/market?currency=${currency}`);
    const itemMarket = (id: string) => read(`/api/v1/assets/${id}/market?currency=coin`);
    expect(await collectionMarket()).toMatchObject({ bestOffer: null, bestOfferId: null });
    const low = await offer(bob, { collection: 'best', price: '10' });
    const high = await offer(carol, { collection: 'best', price: '12.5' });
    const own = await offer(bob, { assetId: item, price: '20' });
    // A collection's: its collection offers (an item offer is for that item's holder only).
    expect(await collectionMarket()).toMatchObject({ bestOffer: '12.5', bestOfferId: high.id });
    // An item's: its own offers and its collection's, whichever is higher.
    expect(await itemMarket(item)).toMatchObject({ bestOffer: '20', bestOfferId: own.id });
    expect(await itemMarket(other)).toMatchObject({ bestOffer: '12.5', bestOfferId: high.id });
    expect(await collectionMarket('shell')).toMatchObject({ bestOffer: null, bestOfferId: null });
    // Cancelled: the next best. Past its expiry (still open until the sweep): skipped.
    expect((await call(carol, 'POST', `/api/v1/offers/${high.id}/cancel`)).status).toBe(200);
    expect(await collectionMarket()).toMatchObject({ bestOffer: '10', bestOfferId: low.id });
    await orm()
      .em.fork()
      .nativeUpdate(Offer, { id: own.id }, { expiresAt: new Date(Date.now() - 1000) });
    expect(await itemMarket(item)).toMatchObject({ bestOffer: '10', bestOfferId: low.id });
    // Accepted: gone.
    const accepted = await accept(alice, low.id, { assetId: other });
    expect(accepted.status, accepted.text).toBe(201);
    expect(await collectionMarket()).toMatchObject({ bestOffer: null, bestOfferId: null });
    expect(await itemMarket(item)).toMatchObject({ bestOffer: null, bestOfferId: null });
    expect((await call(bob, 'POST', `/api/v1/offers/${own.id}/cancel`)).status).toBe(200);
  });

  it('a trait offer names its attribute; refused without a collection or with an empty or oversized trait, nothing reserved; its bidder cancels it to release the price', async () => {
    const swordId = await sword(alice.wallet);
    const rare = { type: 'rarity', value: 'rare' };
    const before = await reserved('coin', bob.wallet);
    const cases: [Record<string, unknown>, number, string][] = [
      [{ collection: 'nowhere', trait: rare }, 404, '/problems/not-found'],
      [{ assetId: swordId, trait: rare }, 400, '/problems/validation-failed'],
      [{ trait: rare }, 400, '/problems/validation-failed'],
      [{ collection: 'keep', trait: { type: '', value: 'rare' } }, 400, '/problems/validation-failed'],
      [{ collection: 'keep', trait: { type: 'rarity', value: '' } }, 400, '/problems/validation-failed'],
      [
        { collection: 'keep', trait: { type: 't'.repeat(101), value: 'rare' } },
        400,
        '/problems/validation-failed',
      ],
      [
        { collection: 'keep', trait: { type: 'rarity', value: 'v'.repeat(501) } },
        400,
        '/problems/validation-failed',
      ],
      [{ collection: 'keep', trait: { type: 'rarity' } }, 400, '/problems/validation-failed'],
      [{ collection: 'keep', trait: { type: 'level', value: 7 } }, 400, '/problems/validation-failed'],
      [{ collection: 'shut', trait: rare }, 409, '/problems/trading-disabled'],
    ];
    for (const [body, status, type] of cases) {
      const answer = await call(bob, 'POST', '/api/v1/offers', {
        wallet: bob.wallet,
        currency: 'coin',
        price: '1',
        ...body,
      });
      expect([answer.status, answer.body.type], `${JSON.stringify(body)}: ${answer.text}`).toEqual([
        status,
        type,
      ]);
    }
    expect(await reserved('coin', bob.wallet)).toBe(before);
    expect(
      await orm()
        .em.fork()
        .count(Offer, { traitType: { $ne: null } }),
    ).toBe(0);

    const after = await lastEventId();
    const made = await offer(bob, { collection: 'keep', trait: rare, price: '12' }, 't1');
    expect(made).toMatchObject({
      status: 'open',
      assetId: null,
      collection: 'keep',
      trait: rare,
      price: '12',
    });
    expect(await reserved('coin', bob.wallet)).toBe(before + 1200n);
    expect(await read(`/api/v1/offers/${made.id}`)).toEqual(made);
    const events = await eventsAfter(after);
    expect(events.map((e: { type: string; data: unknown }) => [e.type, e.data])).toEqual([
      ['offerCreated', made],
    ]);
    // Only the bidder's wallet controller cancels; the cancellation releases the price.
    const foreign = await call(alice, 'POST', `/api/v1/offers/${made.id}/cancel`);
    expect([foreign.status, foreign.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const cancelled = await call(bob, 'POST', `/api/v1/offers/${made.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', trait: rare });
    expect(await reserved('coin', bob.wallet)).toBe(before);
  });

  it('a trait offer is accepted with an item having the attribute: sold, paid exactly from the reservation, its events; an item lacking it is refused and nothing changes', async () => {
    const rare = await sword(alice.wallet);
    const plain = await charm(alice.wallet, [{ trait_type: 'rarity', value: 'common' }]);
    const trait = { type: 'rarity', value: 'rare' };
    const reservedBefore = await reserved('coin', carol.wallet);
    const made = await offer(carol, { collection: 'keep', trait, price: '40' });
    const balances = async () => ({
      alice: await balance('coin', alice.wallet),
      carol: await balance('coin', carol.wallet),
      studio: await balance('coin', studio.wallet),
      fee: await balance('coin', FEE_WALLET),
    });
    const before = await balances();
    const missing = await accept(alice, made.id);
    expect([missing.status, missing.body.errors?.[0]?.pointer]).toEqual([400, '/body/assetId']);
    const lacking = await accept(alice, made.id, { assetId: plain });
    expect([lacking.status, lacking.body.type], lacking.text).toEqual([409, '/problems/offer-item-mismatch']);
    expect(lacking.body.detail).toContain('rarity rare');
    // Only the item's holder accepts: another's wallet (403), or a wallet not holding it (409).
    const notMine = await call(bob, 'POST', `/api/v1/offers/${made.id}/accept`, {
      wallet: alice.wallet,
      assetId: rare,
    });
    expect([notMine.status, notMine.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const notHeld = await accept(bob, made.id, { assetId: rare });
    expect([notHeld.status, notHeld.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const own = await accept(carol, made.id, { assetId: rare });
    expect([own.status, own.body.type]).toEqual([409, '/problems/own-offer']);
    expect([await owner(rare), await owner(plain)]).toEqual([alice.wallet, alice.wallet]);
    expect(await balances()).toEqual(before);
    expect(await reserved('coin', carol.wallet)).toBe(reservedBefore + 4000n);
    expect(await read(`/api/v1/offers/${made.id}`)).toEqual(made);

    const after = await lastEventId();
    const accepted = await accept(alice, made.id, { assetId: rare });
    expect(accepted.status, accepted.text).toBe(201);
    // 4000 base units: royalty 5 % = 200, fee 2.5 % = 100, seller 3700.
    expect(accepted.body.sale).toMatchObject({
      offerId: made.id,
      assetId: rare,
      price: '40',
      royalty: '2',
      fee: '1',
      sellerProceeds: '37',
      seller: alice.wallet,
      buyer: carol.wallet,
    });
    expect(accepted.body.offer).toMatchObject({ status: 'accepted', trait, soldAssetId: rare });
    expect(await owner(rare)).toBe(carol.wallet);
    const cents = (text: string) => Math.round(Number(text) * 100);
    const now = await balances();
    expect(cents(now.alice) - cents(before.alice)).toBe(3700);
    expect(cents(now.carol) - cents(before.carol)).toBe(-4000);
    expect(cents(now.studio) - cents(before.studio)).toBe(200);
    expect(cents(now.fee) - cents(before.fee)).toBe(100);
    expect(await reserved('coin', carol.wallet)).toBe(reservedBefore);
    const events = await eventsAfter(after);
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'offerEnded',
      'sale',
      'priceUpdate',
    ]);
    expect(new Set(events.map((e: { operationId?: string }) => e.operationId))).toEqual(
      new Set([accepted.body.id]),
    );
    expect(events[4].data).toEqual(accepted.body.offer);
  });

  it('an item’s best offer counts the trait offers matching its attributes; a collection’s, with a trait, that trait’s', async () => {
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'tb', name: 'TB' })).status).toBe(201);
    const item = await charm(
      alice.wallet,
      [
        { trait_type: 'rarity', value: 'rare' },
        { trait_type: 'level', value: 7 },
      ],
      'tb',
    );
    const common = await charm(alice.wallet, [{ trait_type: 'rarity', value: 'common' }], 'tb');
    const whole = await offer(bob, { collection: 'tb', price: '5' });
    const rare = await offer(bob, { collection: 'tb', trait: { type: 'rarity', value: 'rare' }, price: '8' });
    const level = await offer(carol, { collection: 'tb', trait: { type: 'level', value: '7' }, price: '9' });
    const commons = await offer(carol, {
      collection: 'tb',
      trait: { type: 'rarity', value: 'common' },
      price: '20',
    });
    const itemMarket = (id: string) => read(`/api/v1/assets/${id}/market?currency=coin`);
    const collectionMarket = (query = '') => read(`/api/v1/collections/tb/market?currency=coin${query}`);
    // The level offer matches the number 7 as text; the common offer, higher, is not the item's.
    expect(await itemMarket(item)).toMatchObject({ bestOffer: '9', bestOfferId: level.id });
    expect(await itemMarket(common)).toMatchObject({ bestOffer: '20', bestOfferId: commons.id });
    expect(await collectionMarket()).toMatchObject({ bestOffer: '5', bestOfferId: whole.id });
    expect(await collectionMarket('&traitType=rarity&traitValue=rare')).toMatchObject({
      bestOffer: '8',
      bestOfferId: rare.id,
    });
    // Accepted (the number matches at acceptance too): the next best of the item is its rarity's.
    const sold = await accept(alice, level.id, { assetId: item });
    expect(sold.status, sold.text).toBe(201);
    expect(await itemMarket(item)).toMatchObject({ bestOffer: '8', bestOfferId: rare.id });
    for (const [bidder, made] of [
      [bob, whole],
      [bob, rare],
      [carol, commons],
    ] as const)
      expect((await call(bidder, 'POST', `/api/v1/offers/${made.id}/cancel`)).status).toBe(200);
    expect(await itemMarket(common)).toMatchObject({ bestOffer: null, bestOfferId: null });
  });

  it('offer events reach /ws, filtered by the bidder’s wallet, each checked against the AsyncAPI document', async () => {
    const socket = await openSocket(t, bob);
    try {
      const { subscriptionId } = await subscribe(socket, { walletId: bob.wallet });
      const swordId = await sword(alice.wallet);
      const made = await offer(bob, { assetId: swordId, price: '3' });
      const accepted = await accept(alice, made.id);
      expect(accepted.status, accepted.text).toBe(201);
      const last = (await eventsAfter('0')).at(-1);
      await waitForId(socket, subscriptionId, last.id);
      const seen = eventsFor(socket, subscriptionId).filter(
        (m) => m.operationId === accepted.body.id || m.data?.id === made.id,
      );
      expect(seen.map((m) => m.type)).toEqual([
        'offerCreated',
        'newTransfer',
        'newTransfer',
        'newTransfer',
        'newTransfer',
        'offerEnded',
        'sale',
        'priceUpdate',
      ]);
      expect(seen[0].data).toEqual(made);
      expect(seen.find((m) => m.type === 'offerEnded')?.data).toEqual(accepted.body.offer);
    } finally {
      socket.close();
    }
  });
});

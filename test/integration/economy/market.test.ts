// Issue 35: the marketplace through the real app over HTTP, on both databases: a studio's settings
// (royalty capped by the deployment), listings and every refusal (soulbound, frozen, burned, trading
// off, a currency not accepted, more than held, another's wallet), a purchase as one operation (the
// item, the price split seller + royalty + fee == price exactly, the sale, the market price, every
// event under one op id, replay by Idempotency-Key), two buyers racing (exactly one wins, the other a
// 409), a listed NFT moving, burning or freezing (its listing ends in the same plan, an event says
// so), cancellation, expiry, and the market figures. Every response is checked against the contract
// by the test client; the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Listing } from '../../../src/db/entities/Listing.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { eventsFor, openSocket, subscribe, waitForId } from '../events/world.ts';

const metadata = (rarity = 'common') => ({
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'rarity', value: rarity }],
  creator: 'Example Studio',
});
const FEE_WALLET = '0x00000000000000000000000000000000000Fee01';

describe.each(DB_KINDS)('the marketplace on %s', (kind) => {
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
  const owner = async (id: string) => (await read(`/assets/${id}`)).owner;
  const sword = async (to: string, collection = 'realm', rarity = 'common') => {
    const made = await call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
      items: [{ to, nft: { name: 'Sword', metadata: metadata(rarity) } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const mint = async (currency: string, to: string, amount: string) => {
    const minted = await call(studio, 'POST', `/api/v1/currencies/${currency}/mint`, { to, amount });
    expect(minted.status, minted.text).toBe(201);
  };
  const list = async (
    seller: HttpUser,
    assetId: string,
    price: string,
    body: Record<string, unknown> = {},
  ) => {
    const listed = await call(seller, 'POST', '/api/v1/listings', {
      wallet: seller.wallet,
      assetId,
      currency: 'gold',
      price,
      ...body,
    });
    expect(listed.status, listed.text).toBe(201);
    return listed.body.id as string;
  };
  const buy = (buyer: HttpUser, id: string, key?: string) =>
    call(buyer, 'POST', `/api/v1/listings/${id}/buy`, { wallet: buyer.wallet }, key);
  const eventsAfter = async (after: string) => (await read(`/api/v1/events?after=${after}&limit=100`)).data;

  beforeAll(async () => {
    t = await startTestApp(kind, {
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
      MARKET_FEE_BPS: '250',
      MARKET_FEE_WALLET: FEE_WALLET,
      MARKET_MAX_ROYALTY_BPS: '1000',
    });
    [studio, alice, bob, carol] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
      httpUser(t),
    ]);
    for (const body of [
      { id: 'realm', name: 'Realm' },
      { id: 'bound', name: 'Bound', soulbound: true },
      { id: 'closed', name: 'Closed' },
    ])
      expect((await call(studio, 'POST', '/api/v1/collections', body)).status).toBe(201);
    for (const [id, decimals] of [
      ['gold', 2],
      ['silver', 0],
      ['gem', 3],
    ] as const) {
      const created = await call(studio, 'POST', '/api/v1/currencies', {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals,
        collection: 'realm',
        metadata: metadata(),
      });
      expect(created.status, created.text).toBe(201);
    }
    await mint('gold', bob.wallet, '1000');
    await mint('gold', carol.wallet, '1000');
    await mint('silver', bob.wallet, '1000');
    await mint('gem', alice.wallet, '10');
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('a studio sets its collection’s settings, its royalty capped by the deployment; others may not', async () => {
    const path = '/api/v1/collections/realm/market/settings';
    expect((await read(path)).body ?? (await read(path))).toMatchObject({
      collection: 'realm',
      tradingEnabled: true,
      royaltyBps: 0,
      currencies: null,
    });
    const tooHigh = await call(studio, 'PUT', path, { royaltyBps: 1001 });
    expect(tooHigh.status, tooHigh.text).toBe(400);
    expect(tooHigh.body.errors[0].pointer).toBe('/body/royaltyBps');
    const notCurrency = await call(studio, 'PUT', path, { currencies: ['nope'] });
    expect(notCurrency.status, notCurrency.text).toBe(400);
    expect((await call(alice, 'PUT', path, { royaltyBps: 10 })).status).toBe(403);
    const set = await call(studio, 'PUT', path, { royaltyBps: 500, currencies: ['gold', 'gem'] });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ royaltyBps: 500, currencies: ['gold', 'gem'], tradingEnabled: true });
    expect(await read(path)).toEqual(set.body);
  });

  it('refuses what cannot be listed: soulbound, frozen, burned, on-chain, another’s wallet, more than held, a currency not accepted, trading off', async () => {
    const soulbound = await sword(alice.wallet, 'bound');
    const frozen = await sword(alice.wallet);
    expect((await call(studio, 'POST', `/api/v1/assets/${frozen}/freeze`)).status).toBe(200);
    const burned = await sword(alice.wallet);
    expect(
      (await call(alice, 'POST', `/api/v1/assets/${burned}/burn`, { from: alice.wallet, amount: '1' }))
        .status,
    ).toBe(201);
    const mine = await sword(alice.wallet);
    const closed = await sword(alice.wallet, 'closed');
    expect(
      (await call(studio, 'PUT', '/api/v1/collections/closed/market/settings', { tradingEnabled: false }))
        .status,
    ).toBe(200);
    // An on-chain token (issue 20) as the chain projection records it, held by alice: it moves on
    // chain only, so it is neither listed nor auctioned.
    const chainItem = 'chn_0000000000000000000000MKT1';
    const now = kind === 'postgres' ? 'now()' : String(Date.now());
    await orm()
      .em.getConnection()
      .execute(
        `insert into asset (id, seq, kind, name, metadata, collection_id, creator_id, owner, created_at)
         select '${chainItem}', 900001, 'nft', 'Chain Sword', '{}', 'realm', owner_id, '${alice.wallet.toLowerCase()}', ${now}
         from collection where id = 'realm'`,
      );
    const onChainAuction = await call(alice, 'POST', '/api/v1/auctions', {
      wallet: alice.wallet,
      assetId: chainItem,
      currency: 'gold',
      reservePrice: '1',
      minIncrement: '1',
      duration: 60,
    });
    expect([onChainAuction.status, onChainAuction.body.type]).toEqual([409, '/problems/asset-on-chain']);
    const before = await lastEventId();
    const attempt = (user: HttpUser, body: Record<string, unknown>) =>
      call(user, 'POST', '/api/v1/listings', { wallet: user.wallet, currency: 'gold', price: '10', ...body });
    const cases: [HttpUser, Record<string, unknown>, number, string][] = [
      [alice, { assetId: soulbound }, 409, '/problems/asset-soulbound'],
      [alice, { assetId: frozen }, 409, '/problems/asset-frozen'],
      [alice, { assetId: burned }, 409, '/problems/insufficient-balance'],
      [alice, { assetId: closed }, 409, '/problems/trading-disabled'],
      [alice, { assetId: mine, currency: 'silver' }, 409, '/problems/currency-not-accepted'],
      [alice, { assetId: mine, currency: 'realm' }, 404, '/problems/not-found'],
      [alice, { assetId: mine, price: '0' }, 400, '/problems/invalid-amount'],
      [alice, { assetId: mine, price: '1.001' }, 400, '/problems/invalid-amount'],
      [alice, { assetId: mine, amount: '2' }, 400, '/problems/invalid-amount'],
      [alice, { assetId: 'gem', amount: '10.001', price: '1' }, 409, '/problems/insufficient-balance'],
      [bob, { assetId: mine }, 409, '/problems/insufficient-balance'],
      [bob, { assetId: mine, wallet: alice.wallet }, 403, '/problems/wallet-not-controlled'],
      [alice, { assetId: 'chn_5Q2W8E3R7T1Y9V4J6K0P2A8S5D' }, 404, '/problems/not-found'],
      [alice, { assetId: chainItem }, 409, '/problems/asset-on-chain'],
    ];
    for (const [user, body, status, type] of cases) {
      const refused = await attempt(user, body);
      expect([refused.status, refused.body.type], `${JSON.stringify(body)}: ${refused.text}`).toEqual([
        status,
        type,
      ]);
    }
    expect(await eventsAfter(before)).toEqual([]);
    // The row stood for the projection's: gone again, so the ledger's invariants stay the ledger's own.
    await orm().em.getConnection().execute(`delete from asset where id = '${chainItem}'`);
  });

  it('sells a Sword in one operation: the item, seller + royalty + fee == price, the sale, the market price, one op id, replay', async () => {
    const swordId = await sword(alice.wallet);
    const before = await lastEventId();
    const listed = await call(
      alice,
      'POST',
      '/api/v1/listings',
      {
        wallet: alice.wallet,
        assetId: swordId,
        currency: 'gold',
        price: '99.99',
      },
      'l1',
    );
    expect(listed.status, listed.text).toBe(201);
    const id = listed.body.id;
    expect(listed.headers.get('location')).toBe(`/api/v1/listings/${id}`);
    expect(listed.body).toMatchObject({
      status: 'active',
      seller: alice.wallet,
      price: '99.99',
      amount: '1',
      endReason: null,
    });
    expect(
      (
        await call(
          alice,
          'POST',
          '/api/v1/listings',
          { wallet: alice.wallet, assetId: swordId, currency: 'gold', price: '99.99' },
          'l1',
        )
      ).body.id,
    ).toBe(id);
    expect(await read(`/api/v1/listings/${id}`)).toEqual(listed.body);
    const mineActive = await read(`/api/v1/listings?seller=${alice.wallet}&status=active&collection=realm`);
    expect(mineActive.data.map((l: { id: string }) => l.id)).toContain(id);
    expect(await owner(swordId)).toBe(alice.wallet);

    const created = await eventsAfter(before);
    expect(created.map((e: { type: string }) => e.type)).toEqual(['listingCreated']);

    const goldBefore = { alice: await balance('gold', alice.wallet), bob: await balance('gold', bob.wallet) };
    const afterListing = await lastEventId();
    const bought = await buy(bob, id, 'b1');
    expect(bought.status, bought.text).toBe(201);
    // 99.99 gold = 9999 base units: royalty 5 % = 499 (499.95 rounded down), fee 2.5 % = 249 (249.975 down), seller 9251.
    expect(bought.body.sale).toMatchObject({
      price: '99.99',
      royalty: '4.99',
      fee: '2.49',
      sellerProceeds: '92.51',
      seller: alice.wallet,
      buyer: bob.wallet,
    });
    const units = (text: string) => BigInt(text.replace('.', ''));
    const { sale } = bought.body;
    expect(units(sale.sellerProceeds) + units(sale.royalty) + units(sale.fee)).toBe(units(sale.price));
    expect(bought.body.listing).toMatchObject({ id, status: 'sold', operationId: bought.body.id });
    expect(
      bought.body.transfers.map((tr: { assetId: string; amount: string }) => [tr.assetId, tr.amount]),
    ).toEqual([
      [swordId, '1'],
      ['gold', '92.51'],
      ['gold', '4.99'],
      ['gold', '2.49'],
    ]);
    expect(await owner(swordId)).toBe(bob.wallet);
    expect(await balance('gold', alice.wallet)).toBe(String(Number(goldBefore.alice) + 92.51));
    expect(await balance('gold', bob.wallet)).toBe(String(Number(goldBefore.bob) - 99.99));
    expect(await balance('gold', FEE_WALLET)).toBe('2.49');
    // The royalty goes to the studio's first wallet (no royaltyWallet set).
    expect(await balance('gold', studio.wallet)).toBe('4.99');

    const events = await eventsAfter(afterListing);
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'sale',
      'priceUpdate',
    ]);
    expect(new Set(events.map((e: { operationId?: string }) => e.operationId))).toEqual(
      new Set([bought.body.id]),
    );
    expect(events[4].data).toEqual(sale);

    const again = await buy(bob, id, 'b1');
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(again.body).toEqual(bought.body);
    const twice = await buy(carol, id);
    expect([twice.status, twice.body.type]).toEqual([409, '/problems/listing-not-active']);

    const price = await read(`/api/v1/price/${swordId}?currency=gold`);
    expect(price).toMatchObject({ assetId: swordId, price: '99.99', currency: 'gold', source: 'market' });
    // Candles are built from the sales too (each NFT sale is a price observation of source `market`).
    const history = await read(`/api/v1/price/${swordId}/history?currency=gold&interval=1h`);
    expect(history.candles.map((c: { close: string; count: number }) => [c.close, c.count])).toEqual([
      ['99.99', 1],
    ]);
    const item = await read(`/api/v1/assets/${swordId}/market?currency=gold`);
    expect(item).toMatchObject({ floor: null, lastSale: sale, sales24h: 1, volume24h: '99.99' });
    const sales = await read(`/api/v1/sales?assetId=${swordId}`);
    expect(sales.data).toEqual([sale]);
  });

  it('two buyers racing for one listing: exactly one wins, the other gets 409 listing-not-active', async () => {
    for (let round = 0; round < 3; round++) {
      const id = await list(alice, await sword(alice.wallet), '10');
      const answers = await Promise.all([buy(bob, id), buy(carol, id)]);
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses, answers.map((a) => a.text).join('\n')).toEqual([201, 409]);
      const lost = answers.find((a) => a.status === 409);
      expect(lost?.body.type).toBe('/problems/listing-not-active');
      expect(
        (await read(`/api/v1/sales?collection=realm&limit=100`)).data.filter(
          (s: { listingId: string }) => s.listingId === id,
        ),
      ).toHaveLength(1);
    }
  });

  it('the market events reach /ws, filtered by the buyer’s wallet, each checked against the AsyncAPI document', async () => {
    const socket = await openSocket(t, carol);
    try {
      const { subscriptionId } = await subscribe(socket, { walletId: carol.wallet });
      const swordId = await sword(alice.wallet);
      const id = await list(alice, swordId, '2');
      const bought = await buy(carol, id);
      expect(bought.status, bought.text).toBe(201);
      const last = (await eventsAfter('0')).at(-1);
      await waitForId(socket, subscriptionId, last.id);
      const seen = eventsFor(socket, subscriptionId).filter((m) => m.operationId === bought.body.id);
      // The listing concerns alice only; the purchase's transfers, its sale (seller and buyer) reach carol.
      expect(seen.map((m) => m.type)).toEqual([
        'newTransfer',
        'newTransfer',
        'newTransfer',
        'newTransfer',
        'sale',
        'priceUpdate',
      ]);
      expect(seen.find((m) => m.type === 'sale')?.data).toEqual(bought.body.sale);
    } finally {
      socket.close();
    }
  });

  it('refuses buying one’s own listing, without the price, or from another’s wallet, and moves nothing', async () => {
    const swordId = await sword(alice.wallet);
    const id = await list(alice, swordId, '5000');
    const before = await lastEventId();
    const own = await buy(alice, id);
    expect([own.status, own.body.type]).toEqual([409, '/problems/own-listing']);
    const poor = await buy(bob, id);
    expect([poor.status, poor.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const other = await call(carol, 'POST', `/api/v1/listings/${id}/buy`, { wallet: bob.wallet });
    expect([other.status, other.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const missing = await call(bob, 'POST', '/api/v1/listings/lst_01JD3ZF8G0H2J4K6M8N0P2Q4R6/buy', {
      wallet: bob.wallet,
    });
    expect(missing.status).toBe(404);
    expect(await eventsAfter(before)).toEqual([]);
    expect(await owner(swordId)).toBe(alice.wallet);
    expect((await read(`/api/v1/listings/${id}`)).status).toBe('active');
  });

  it('a listed NFT that moves, burns or freezes ends its listing in the same operation, with a listingEnded event', async () => {
    for (const [how, reason] of [
      ['transfer', 'moved'],
      ['burn', 'burned'],
      ['freeze', 'frozen'],
    ] as const) {
      const swordId = await sword(alice.wallet);
      const id = await list(alice, swordId, '10');
      const before = await lastEventId();
      const done =
        how === 'transfer'
          ? await call(alice, 'POST', '/api/v1/transfer', {
              assetId: swordId,
              from: alice.wallet,
              to: carol.wallet,
              amount: '1',
            })
          : how === 'burn'
            ? await call(alice, 'POST', `/api/v1/assets/${swordId}/burn`, { from: alice.wallet, amount: '1' })
            : await call(studio, 'POST', `/api/v1/assets/${swordId}/freeze`);
      expect(done.status, done.text).toBeLessThan(300);
      const events = await eventsAfter(before);
      const ended = events.find((e: { type: string }) => e.type === 'listingEnded');
      expect(ended?.data, how).toMatchObject({ id, status: 'ended', endReason: reason });
      expect((await read(`/api/v1/listings/${id}`)).status).toBe('ended');
      const refused = await buy(bob, id);
      expect([refused.status, refused.body.type]).toEqual([409, '/problems/listing-not-active']);
    }
  });

  it('a currency listing whose seller spent the amount is refused at the purchase and ends then', async () => {
    const id = await list(alice, 'gem', '30', { amount: '10' });
    expect(
      (
        await call(alice, 'POST', '/api/v1/transfer', {
          assetId: 'gem',
          from: alice.wallet,
          to: carol.wallet,
          amount: '1',
        })
      ).status,
    ).toBe(201);
    const before = await lastEventId();
    const refused = await buy(bob, id);
    expect([refused.status, refused.body.type]).toEqual([409, '/problems/listing-not-active']);
    const events = await eventsAfter(before);
    expect(
      events.map((e: { type: string; data: { endReason?: string } }) => [e.type, e.data.endReason]),
    ).toEqual([['listingEnded', 'unavailable']]);
    // A fungible listing sells whole: 9 gem for 27 gold.
    const next = await list(alice, 'gem', '27', { amount: '9' });
    const bought = await buy(bob, next);
    expect(bought.status, bought.text).toBe(201);
    expect(await balance('gem', bob.wallet)).toBe('9');
  });

  it('the seller cancels (once); another may not; an expired listing is not buyable', async () => {
    const id = await list(alice, await sword(alice.wallet), '10');
    expect((await call(bob, 'POST', `/api/v1/listings/${id}/cancel`)).status).toBe(403);
    const before = await lastEventId();
    const cancelled = await call(alice, 'POST', `/api/v1/listings/${id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', endReason: null });
    expect((await eventsAfter(before)).map((e: { type: string }) => e.type)).toEqual(['listingEnded']);
    const again = await call(alice, 'POST', `/api/v1/listings/${id}/cancel`);
    expect([again.status, again.body.type]).toEqual([409, '/problems/listing-not-active']);

    const expiring = await list(alice, await sword(alice.wallet), '10', { expiresIn: 60 });
    await orm()
      .em.fork()
      .nativeUpdate(Listing, { id: expiring }, { expiresAt: new Date(Date.now() - 1000) });
    expect((await read(`/api/v1/listings/${expiring}`)).status).toBe('expired');
    const late = await buy(bob, expiring);
    expect([late.status, late.body.type]).toEqual([409, '/problems/listing-not-active']);
  });

  it('market figures: the floor (also per trait value), the last sale, the 24 h volume; turning trading off ends listings', async () => {
    const epic = await sword(alice.wallet, 'realm', 'epic');
    const plain = await sword(alice.wallet, 'realm', 'common');
    const epicId = await list(alice, epic, '7');
    const plainId = await list(alice, plain, '3');
    const stats = await read('/api/v1/collections/realm/market?currency=gold');
    expect(stats).toMatchObject({ currency: 'gold', floor: '3', floorListingId: plainId });
    expect(stats.sales24h).toBeGreaterThan(0);
    const epicFloor = await read(
      '/api/v1/collections/realm/market?currency=gold&traitType=rarity&traitValue=epic',
    );
    expect(epicFloor).toMatchObject({ floor: '7', floorListingId: epicId });
    const sold = await buy(bob, plainId);
    expect(sold.status, sold.text).toBe(201);
    const after = await read('/api/v1/collections/realm/market?currency=gold');
    expect(after).toMatchObject({ floor: '7', lastSale: sold.body.sale });

    const before = await lastEventId();
    expect(
      (await call(studio, 'PUT', '/api/v1/collections/realm/market/settings', { tradingEnabled: false }))
        .status,
    ).toBe(200);
    const ended = (await eventsAfter(before)).filter((e: { type: string }) => e.type === 'listingEnded');
    expect(ended.map((e: { data: { id: string; endReason: string } }) => e.data.endReason)).toContain(
      'tradingOff',
    );
    expect((await read(`/api/v1/listings/${epicId}`)).status).toBe('ended');
    expect((await read('/api/v1/collections/realm/market?currency=gold')).floor).toBeNull();
    const refused = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: epic,
      currency: 'gold',
      price: '1',
    });
    expect(refused.body.type).toBe('/problems/trading-disabled');
    expect(
      (await call(studio, 'PUT', '/api/v1/collections/realm/market/settings', { tradingEnabled: true }))
        .status,
    ).toBe(200);
  });
});

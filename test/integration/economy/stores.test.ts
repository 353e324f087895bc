// Issue 36: stores through the real app over HTTP, on both databases: a studio's offers (a bundle of
// a currency and an NFT template for a currency price) and every refusal at creation (another
// studio, a player, a price in an NFT, an amount that does not fit, a window backwards, a payTo
// wallet the studio does not control); a purchase as one operation (the payment, the mints, the
// counters, the events under one op id, a replay by Idempotency-Key), the per-wallet limit, versioned
// prices (a purchase naming an old version moves nothing), two buyers racing for the last unit
// (exactly one wins), a closed or not yet open offer, a buyer short of the price, a grant past its
// max supply, a demoted creator, quantities. Every response is checked against the contract by the
// test client; the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser, setRole } from '../../helpers/ledger-fixtures.ts';

const metadata = {
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'rarity', value: 'starter' }],
  creator: 'Example Studio',
};

describe.each(DB_KINDS)('stores on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let rival: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let carol: HttpUser;
  let swordTemplate = 0;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );
  const balance = async (asset: string, wallet: string) =>
    (await read(`/assets/${asset}/owners`)).data.find(
      (o: { wallet: string }) => o.wallet.toLowerCase() === wallet.toLowerCase(),
    )?.balance ?? '0';
  const mint = async (currency: string, to: string, amount: string) => {
    const minted = await call(studio, 'POST', `/api/v1/currencies/${currency}/mint`, { to, amount });
    expect(minted.status, minted.text).toBe(201);
  };
  const offerBody = (body: Record<string, unknown> = {}) => ({
    name: 'Starter bundle',
    price: [{ assetId: 'gold', amount: '12.5' }],
    grants: [
      { assetId: 'gems', amount: '10' },
      { nft: { name: `Starter Sword ${++swordTemplate}`, metadata } },
    ],
    payTo: studio.wallet,
    ...body,
  });
  const createOffer = async (body: Record<string, unknown> = {}) => {
    const created = await call(studio, 'POST', '/api/v1/collections/shop/store-offers', offerBody(body));
    expect(created.status, created.text).toBe(201);
    return created.body as { id: string; version: number };
  };
  const buy = (buyer: HttpUser, id: string, body: Record<string, unknown> = {}, key?: string) =>
    call(
      buyer,
      'POST',
      `/api/v1/store-offers/${id}/purchase`,
      { wallet: buyer.wallet, version: 1, ...body },
      key,
    );
  const eventsAfter = async (after: string) => (await read(`/api/v1/events?after=${after}&limit=100`)).data;

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, rival, alice, bob, carol] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
      httpUser(t),
    ]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'shop', name: 'Shop' })).status).toBe(
      201,
    );
    for (const [id, decimals, maxSupply] of [
      ['gold', 2, undefined],
      ['gems', 0, undefined],
      ['rare', 0, '5'],
    ] as const) {
      const created = await call(studio, 'POST', '/api/v1/currencies', {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals,
        collection: 'shop',
        metadata,
        ...(maxSupply && { maxSupply }),
      });
      expect(created.status, created.text).toBe(201);
    }
    for (const buyer of [alice, bob, carol]) await mint('gold', buyer.wallet, '100');
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('the collection’s studio creates an offer; other studios, players and bad terms are refused', async () => {
    const path = '/api/v1/collections/shop/store-offers';
    expect((await call(rival, 'POST', path, offerBody({ payTo: rival.wallet }))).status).toBe(403);
    const player = await call(alice, 'POST', path, offerBody({ payTo: alice.wallet }));
    expect(player.status).toBe(403);
    expect(player.body.type).toBe('/problems/role-not-allowed');
    const notMine = await call(studio, 'POST', path, offerBody({ payTo: alice.wallet }));
    expect(notMine.status, notMine.text).toBe(403);
    expect(notMine.body.type).toBe('/problems/wallet-not-controlled');
    const tooFine = await call(
      studio,
      'POST',
      path,
      offerBody({ price: [{ assetId: 'gold', amount: '1.005' }] }),
    );
    expect(tooFine.status).toBe(400);
    expect(tooFine.body.errors[0].pointer).toBe('/body/price/0/amount');
    const twice = await call(
      studio,
      'POST',
      path,
      offerBody({
        price: [
          { assetId: 'gold', amount: '1' },
          { assetId: 'gold', amount: '2' },
        ],
      }),
    );
    expect(twice.status).toBe(400);
    const backwards = await call(
      studio,
      'POST',
      path,
      offerBody({ startsAt: '2030-01-02T00:00:00Z', endsAt: '2030-01-01T00:00:00Z' }),
    );
    expect(backwards.status).toBe(400);
    expect(backwards.body.errors[0].pointer).toBe('/body/endsAt');
    const missing = await call(
      studio,
      'POST',
      path,
      offerBody({ price: [{ assetId: 'nope', amount: '1' }] }),
    );
    expect(missing.status).toBe(404);
    const created = await call(studio, 'POST', path, offerBody({ perWalletLimit: 2, totalLimit: 100 }));
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('location')).toBe(`/api/v1/store-offers/${created.body.id}`);
    expect(created.body).toMatchObject({
      collection: 'shop',
      version: 1,
      status: 'active',
      price: [{ assetId: 'gold', amount: '12.5' }],
      perWalletLimit: 2,
      totalLimit: 100,
      sold: 0,
      payTo: studio.wallet,
    });
    expect(await read(`/api/v1/store-offers/${created.body.id}`)).toEqual(created.body);
    const listed = await read('/api/v1/collections/shop/store-offers?status=active');
    expect(listed.data.map((o: { id: string }) => o.id)).toContain(created.body.id);
  });

  it('a purchase is one operation: payment, bundle minted, counters, events under one op id; a retry replays it', async () => {
    const offer = await createOffer({ perWalletLimit: 1 });
    const before = await lastEventId();
    const goldBefore = await balance('gold', studio.wallet);
    const bought = await buy(alice, offer.id, {}, 'buy-1');
    expect(bought.status, bought.text).toBe(201);
    const { purchase, transfers, nfts } = bought.body;
    expect(purchase).toMatchObject({
      offerId: offer.id,
      version: 1,
      quantity: 1,
      wallet: alice.wallet,
      payTo: studio.wallet,
      paid: [{ assetId: 'gold', amount: '12.5' }],
    });
    expect(purchase.granted).toEqual([
      { assetId: 'gems', amount: '10' },
      { assetId: nfts[0].id, amount: '1' },
    ]);
    expect(nfts[0]).toMatchObject({
      name: `Starter Sword ${swordTemplate}`,
      owner: alice.wallet,
      collection: 'shop',
    });
    expect(transfers.map((x: { assetId: string; amount: string }) => [x.assetId, x.amount])).toEqual([
      ['gold', '12.5'],
      ['gems', '10'],
    ]);
    expect(await balance('gold', alice.wallet)).toBe('87.5');
    expect(await balance('gems', alice.wallet)).toBe('10');
    expect(Number(await balance('gold', studio.wallet))).toBe(Number(goldBefore) + 12.5);
    const events = await eventsAfter(before);
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'newTransfer',
      'newNFT',
      'storePurchase',
    ]);
    expect(new Set(events.map((e: { operationId?: string }) => e.operationId))).toEqual(
      new Set([bought.body.id]),
    );
    expect(events[3].data).toEqual(purchase);

    // The same key answers the same purchase and moves nothing more.
    const again = await buy(alice, offer.id, {}, 'buy-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(bought.body);
    expect(await balance('gold', alice.wallet)).toBe('87.5');
    expect(await read(`/api/v1/store-offers/${offer.id}?wallet=${alice.wallet}`)).toMatchObject({
      sold: 1,
      walletBought: 1,
    });

    // The per-wallet limit: a second purchase by the same wallet is refused, nothing moves.
    const mark = await lastEventId();
    const second = await buy(alice, offer.id, {}, 'buy-2');
    expect(second.status, second.text).toBe(409);
    expect(second.body.type).toBe('/problems/offer-limit-reached');
    expect(await balance('gold', alice.wallet)).toBe('87.5');
    expect(await eventsAfter(mark)).toEqual([]);
    expect((await buy(bob, offer.id)).status).toBe(201);
    expect((await read(`/api/v1/store-offers/${offer.id}`)).sold).toBe(2);
  });

  it('a price change makes a new version: a purchase of the old one moves nothing, the new one pays the new price', async () => {
    const offer = await createOffer();
    const changed = await call(studio, 'PATCH', `/api/v1/store-offers/${offer.id}`, {
      price: [{ assetId: 'gold', amount: '20' }],
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ version: 2, price: [{ assetId: 'gold', amount: '20' }] });
    expect((await call(rival, 'PATCH', `/api/v1/store-offers/${offer.id}`, { name: 'Mine' })).status).toBe(
      403,
    );
    const goldBefore = await balance('gold', carol.wallet);
    const stale = await buy(carol, offer.id, { version: 1 });
    expect(stale.status, stale.text).toBe(409);
    expect(stale.body.type).toBe('/problems/offer-version-changed');
    expect(stale.body.detail).toContain('version 2');
    expect(await balance('gold', carol.wallet)).toBe(goldBefore);
    const fresh = await buy(carol, offer.id, { version: 2 });
    expect(fresh.status, fresh.text).toBe(201);
    expect(fresh.body.purchase).toMatchObject({ version: 2, paid: [{ assetId: 'gold', amount: '20' }] });
    expect(Number(await balance('gold', carol.wallet))).toBe(Number(goldBefore) - 20);
  });

  it('two buyers racing for the last unit: exactly one wins, the other gets offer-limit-reached', async () => {
    for (let round = 0; round < 3; round++) {
      const offer = await createOffer({ totalLimit: 1, grants: [{ assetId: 'gems', amount: '1' }] });
      const answers = await Promise.all([buy(alice, offer.id), buy(bob, offer.id), buy(carol, offer.id)]);
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses, answers.map((a) => a.text).join('\n')).toEqual([201, 409, 409]);
      for (const lost of answers.filter((a) => a.status === 409))
        expect(lost.body.type).toBe('/problems/offer-limit-reached');
      expect((await read(`/api/v1/store-offers/${offer.id}`)).sold).toBe(1);
    }
    // One wallet racing itself (two keys) for its last unit: exactly one applies.
    const offer = await createOffer({ perWalletLimit: 1, grants: [{ assetId: 'gems', amount: '1' }] });
    const answers = await Promise.all([buy(bob, offer.id, {}, 'race-a'), buy(bob, offer.id, {}, 'race-b')]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    expect(await read(`/api/v1/store-offers/${offer.id}?wallet=${bob.wallet}`)).toMatchObject({
      sold: 1,
      walletBought: 1,
    });
  });

  it('closed, not yet open or ended offers are not for sale; reopening makes a new version', async () => {
    const offer = await createOffer();
    const closed = await call(studio, 'PATCH', `/api/v1/store-offers/${offer.id}`, { status: 'closed' });
    expect(closed.body).toMatchObject({ status: 'closed', version: 2 });
    const refused = await buy(alice, offer.id, { version: 2 });
    expect(refused.status).toBe(409);
    expect(refused.body.type).toBe('/problems/offer-not-available');
    const reopened = await call(studio, 'PATCH', `/api/v1/store-offers/${offer.id}`, { status: 'active' });
    expect(reopened.body.version).toBe(3);
    expect((await buy(alice, offer.id, { version: 3 })).status).toBe(201);

    const later = await createOffer({ startsAt: new Date(Date.now() + 3_600_000).toISOString() });
    const early = await buy(alice, later.id);
    expect(early.status).toBe(409);
    expect(early.body.detail).toContain('on sale from');
    const over = await createOffer({ endsAt: new Date(Date.now() + 300).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await buy(alice, over.id)).body.type).toBe('/problems/offer-not-available');
  });

  it('a buyer short of the price, a grant past its max supply, another’s wallet: refused, nothing counted', async () => {
    const dear = await createOffer({ price: [{ assetId: 'gold', amount: '1000' }] });
    const short = await buy(alice, dear.id);
    expect(short.status).toBe(409);
    expect(short.body.type).toBe('/problems/insufficient-balance');
    expect((await read(`/api/v1/store-offers/${dear.id}`)).sold).toBe(0);
    const rare = await createOffer({ grants: [{ assetId: 'rare', amount: '3' }] });
    expect((await buy(bob, rare.id)).status).toBe(201);
    const past = await buy(carol, rare.id);
    expect(past.status).toBe(409);
    expect(past.body.type).toBe('/problems/max-supply-exceeded');
    expect((await read(`/api/v1/store-offers/${rare.id}`)).sold).toBe(1);
    const foreign = await call(alice, 'POST', `/api/v1/store-offers/${rare.id}/purchase`, {
      wallet: bob.wallet,
      version: 1,
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body.type).toBe('/problems/wallet-not-controlled');
  });

  it('quantities multiply the price and the grants; the total limit counts units', async () => {
    const offer = await createOffer({ totalLimit: 5, price: [{ assetId: 'gold', amount: '1' }] });
    const before = await balance('gems', bob.wallet);
    const three = await buy(bob, offer.id, { quantity: 3 });
    expect(three.status, three.text).toBe(201);
    expect(three.body.purchase.paid).toEqual([{ assetId: 'gold', amount: '3' }]);
    expect(three.body.purchase.granted[0]).toEqual({ assetId: 'gems', amount: '30' });
    expect(three.body.nfts).toHaveLength(3);
    expect(Number(await balance('gems', bob.wallet))).toBe(Number(before) + 30);
    const tooMany = await buy(carol, offer.id, { quantity: 3 });
    expect(tooMany.status).toBe(409);
    expect(tooMany.body.detail).toContain('2 units left');
    expect((await buy(carol, offer.id, { quantity: 2 })).status).toBe(201);
  });

  it('a demoted creator’s offers no longer sell', async () => {
    const seller = await httpUser(t, 'studio');
    expect(
      (await call(seller, 'POST', '/api/v1/collections', { id: `demoted-${kind}`, name: 'Demoted' })).status,
    ).toBe(201);
    const created = await call(seller, 'POST', `/api/v1/collections/demoted-${kind}/store-offers`, {
      name: 'Free sword',
      price: [{ assetId: 'gold', amount: '1' }],
      grants: [{ nft: { name: 'Sword', metadata } }],
      payTo: seller.wallet,
    });
    expect(created.status, created.text).toBe(201);
    await setRole(orm(), seller.userId, 'player');
    const refused = await buy(alice, created.body.id);
    expect(refused.status, refused.text).toBe(403);
  });
});

// Issue 35: the buyable listings cheapest first (`GET /api/v1/listings?sort=price`,
// src/domain/ledger/listings-by-price.ts) through the real app over HTTP, on both databases: pages of
// a collection's or an item's listings in one currency in (price, id) order, equal prices split
// across pages, every listing once, the filters kept (another currency, another collection, a closed
// listing left out); a listing bought between two pages (the previous page's last one, and one still
// ahead) does not break the paging; and the refusals (400 problem+json): no currency, no collection
// or item, a seller, another status, an unknown sort, a cursor of another order or currency. Every
// response is checked against the contract by the test client; the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const METADATA = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };

interface ListingBody {
  id: string;
  price: string;
  currency: string;
  collection: string;
  status: string;
}

describe.each(DB_KINDS)('listings cheapest first on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  const orm = () => t.app.orm as unknown as Orm;
  const { call, read } = economyHttp(
    () => t,
    () => bob,
  );

  /** Alice's listings of realm in gold, as listed (id, price). */
  const realmGold: { id: string; price: string }[] = [];

  const sword = async (collection: string) => {
    const made = await call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
      items: [{ to: alice.wallet, nft: { name: 'Sword', metadata: METADATA } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const list = async (assetId: string, price: string, body: Record<string, unknown> = {}) => {
    const listed = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId,
      currency: 'gold',
      price,
      ...body,
    });
    expect(listed.status, listed.text).toBe(201);
    return listed.body.id as string;
  };
  /** Every page of `query` with `limit`, with `between` run after each page. */
  const pages = async (
    query: string,
    limit: number,
    between: (page: number) => Promise<void> = async () => {},
  ) => {
    const seen: ListingBody[][] = [];
    let cursor: string | null = null;
    do {
      const page = await read(`/api/v1/listings?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(page.data);
      cursor = page.next_cursor;
      await between(seen.length);
    } while (cursor && seen.length < 50);
    return seen;
  };
  const byPriceThenId = (a: { id: string; price: string }, b: { id: string; price: string }) =>
    Number(a.price) - Number(b.price) || (a.id < b.id ? -1 : 1);

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    for (const id of ['realm', 'other'])
      expect((await call(studio, 'POST', '/api/v1/collections', { id, name: id })).status).toBe(201);
    for (const [id, decimals] of [
      ['gold', 2],
      ['silver', 0],
      ['ore', 0],
    ] as const) {
      const created = await call(studio, 'POST', '/api/v1/currencies', {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals,
        collection: 'realm',
        metadata: METADATA,
      });
      expect(created.status, created.text).toBe(201);
    }
    for (const [currency, to, amount] of [
      ['gold', bob.wallet, '1000'],
      ['ore', alice.wallet, '100'],
    ])
      expect((await call(studio, 'POST', `/api/v1/currencies/${currency}/mint`, { to, amount })).status).toBe(
        201,
      );
    // Nine swords of realm in gold, five at one price (ties split across pages of 2 and 3).
    for (const price of ['5', '3', '3', '3', '7', '1', '3', '9', '3']) {
      const id = await list(await sword('realm'), price);
      realmGold.push({ id, price });
    }
    // Left out of realm's gold page: a listing in silver, one of another collection, a cancelled one.
    await list(await sword('realm'), '2', { currency: 'silver' });
    await list(await sword('other'), '2');
    const cancelled = await list(await sword('realm'), '2');
    expect((await call(alice, 'POST', `/api/v1/listings/${cancelled}/cancel`)).status).toBe(200);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it("pages a collection's listings of one currency cheapest first, ties by id, each once, filters kept", async () => {
    const expected = [...realmGold].sort(byPriceThenId).map((l) => l.id);
    for (const limit of [1, 2, 3, 4, 9, 100]) {
      const seen = await pages('sort=price&currency=gold&collection=realm', limit);
      const listings = seen.flat();
      expect(
        listings.map((l) => l.id),
        `limit ${limit}`,
      ).toEqual(expected);
      for (const listing of listings) {
        expect(listing).toMatchObject({ currency: 'gold', collection: 'realm', status: 'active' });
      }
      expect(seen.length).toBe(Math.max(1, Math.ceil(expected.length / limit)));
    }
    // `status=active` says the same; the newest-first order filtered by currency too.
    const active = await read(
      '/api/v1/listings?sort=price&currency=gold&collection=realm&status=active&limit=100',
    );
    expect(active.data.map((l: ListingBody) => l.id)).toEqual(expected);
    const newest = await read('/api/v1/listings?currency=gold&collection=realm&status=active&limit=100');
    expect(newest.data.map((l: ListingBody) => l.id)).toEqual([...expected].sort().reverse());
  });

  it("pages an item's listings (an amount of a currency listed several times), also within its collection", async () => {
    const ore: { id: string; price: string }[] = [];
    for (const price of ['4', '2', '4', '1', '4'])
      ore.push({ id: await list('ore', price, { amount: '2' }), price });
    await list('ore', '1', { amount: '1', currency: 'silver' });
    const expected = ore.sort(byPriceThenId).map((l) => l.id);
    expect((await pages('sort=price&currency=gold&assetId=ore', 2)).flat().map((l) => l.id)).toEqual(
      expected,
    );
    expect(
      (await pages('sort=price&currency=gold&assetId=ore&collection=realm', 2)).flat().map((l) => l.id),
    ).toEqual(expected);
    // The item is not of that collection: nothing.
    expect(
      (await read('/api/v1/listings?sort=price&currency=gold&assetId=ore&collection=other')).data,
    ).toEqual([]);
  });

  it('a listing bought between two pages neither breaks the paging nor repeats another', async () => {
    // A fresh collection: gold listings at 10, 20, 20, 20, 30, 40 (ties across the first page's end).
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'fresh', name: 'Fresh' })).status).toBe(
      201,
    );
    const listed: { id: string; price: string }[] = [];
    for (const price of ['20', '40', '20', '10', '30', '20'])
      listed.push({ id: await list(await sword('fresh'), price), price });
    const order = listed.sort(byPriceThenId).map((l) => l.id);
    const bought: string[] = [];
    const buy = async (id: string) => {
      const done = await call(bob, 'POST', `/api/v1/listings/${id}/buy`, { wallet: bob.wallet }, `buy-${id}`);
      expect(done.status, done.text).toBe(201);
      bought.push(id);
    };
    const seen = await pages('sort=price&currency=gold&collection=fresh', 3, async (page) => {
      // After the first page: its last listing (the cursor's) and one on the next page are bought.
      if (page === 1) {
        await buy(order[2]);
        await buy(order[4]);
      }
    });
    const ids = seen.flat().map((l) => l.id);
    expect(seen[0].map((l) => l.id)).toEqual(order.slice(0, 3));
    expect(ids).toEqual(order.filter((id) => id === order[2] || !bought.includes(id)));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it.each([
    ['no currency', 'sort=price&collection=realm', '/query/currency'],
    ['no collection or item', 'sort=price&currency=gold', '/query/collection'],
    [
      'a seller',
      'sort=price&currency=gold&collection=realm&seller=0x00000000000000000000000000000000000000a1',
      '/query/seller',
    ],
    ['another status', 'sort=price&currency=gold&collection=realm&status=sold', '/query/status'],
    ['an unknown sort', 'sort=cheapest&currency=gold&collection=realm', '/query/sort'],
  ])('refuses %s with a 400 problem', async (_name, query, pointer) => {
    const got = await call(bob, 'GET', `/api/v1/listings?${query}`);
    expect(got.status, got.text).toBe(400);
    expect(got.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(got.body.type).toBe('/problems/validation-failed');
    expect(JSON.stringify(got.body.errors ?? got.body)).toContain(pointer);
  });

  it('refuses a cursor of another order, or of another currency, with a 400 problem', async () => {
    const newest = await read('/api/v1/listings?collection=realm&limit=1');
    const cheapest = await read('/api/v1/listings?sort=price&currency=gold&collection=realm&limit=1');
    const silver = await read('/api/v1/listings?sort=price&currency=silver&collection=realm&limit=1');
    expect(newest.next_cursor).toBeTruthy();
    expect(cheapest.next_cursor).toBeTruthy();
    for (const query of [
      `sort=price&currency=gold&collection=realm&cursor=${newest.next_cursor}`,
      `collection=realm&cursor=${cheapest.next_cursor}`,
      `sort=price&currency=silver&collection=realm&cursor=${cheapest.next_cursor}`,
      `sort=price&currency=gold&collection=realm&cursor=${Buffer.from('{"l":"listings:price:gold","k":["-1","x"]}').toString('base64url')}`,
    ]) {
      const got = await call(bob, 'GET', `/api/v1/listings?${query}`);
      expect(got.status, `${query}: ${got.text}`).toBe(400);
      expect(got.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(got.body.type).toBe('/problems/validation-failed');
    }
    expect(silver.data.map((l: ListingBody) => l.currency)).toEqual(['silver']);
  });
});

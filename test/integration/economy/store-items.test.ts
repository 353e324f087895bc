// Issue 36: store offers paid with items by template ("3 Iron Ore"), through the real app over HTTP,
// on both databases. The offer's terms (a template named once, at most 20 items a unit, none in a
// collection that allows no burns); a purchase paid with the NFTs the buyer names (burned from its
// wallet with the currency payment, the grants, the counters and the storePurchase event naming the
// burned items, all under one op id; a retry by Idempotency-Key replays it); every refusal moving
// nothing (a wrong count, another template, another collection's NFT, someone else's, a burned, a
// missing, a frozen, a listed, a lent or an expired NFT, items for an offer priced without items);
// two purchases racing to pay with the same NFT (exactly one wins); a new version for new item
// terms. Every response is checked against the contract by the test client; the ledger's invariants
// after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = {
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'rarity', value: 'common' }],
  creator: 'Example Studio',
};
const ZERO = '0x0000000000000000000000000000000000000000';

describe.each(DB_KINDS)('store offers paid with items on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let swords = 0;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );
  const eventsAfter = async (after: string) => (await read(`/api/v1/events?after=${after}&limit=100`)).data;
  const gold = async (wallet: string) =>
    (await read('/assets/gold/owners')).data.find(
      (o: { wallet: string }) => o.wallet.toLowerCase() === wallet.toLowerCase(),
    )?.balance ?? '0';
  const owners = async (ids: string[]) =>
    Promise.all(ids.map(async (id) => (await read(`/assets/${id}`)).owner as string | null));

  /** NFTs of `collection` named `name`, minted to `to` by the studio. */
  async function ore(to: string, count = 1, name = 'Iron Ore', collection = 'forge'): Promise<string[]> {
    const made = await call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
      items: Array.from({ length: count }, () => ({ to, nft: { name, metadata } })),
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts.map((n: { id: string }) => n.id);
  }
  const createOffer = async (body: Record<string, unknown> = {}) => {
    const created = await call(studio, 'POST', '/api/v1/collections/forge/store-offers', {
      name: 'Steel for ore',
      price: [{ assetId: 'gold', amount: '5' }, { nft: { name: 'Iron Ore', quantity: 3 } }],
      grants: [{ nft: { name: `Steel Sword ${++swords}`, metadata } }],
      payTo: studio.wallet,
      ...body,
    });
    expect(created.status, created.text).toBe(201);
    return created.body as { id: string; version: number };
  };
  const buy = (buyer: HttpUser, id: string, items: string[], key?: string, body = {}) =>
    call(
      buyer,
      'POST',
      `/api/v1/store-offers/${id}/purchase`,
      { wallet: buyer.wallet, version: 1, items, ...body },
      key,
    );

  beforeAll(async () => {
    t = await startTestApp(kind, {
      MARKET_SWEEP_MS: '3600000',
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
    });
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    for (const [id, burnPolicy] of [
      ['forge', 'holder'],
      ['mine', 'holder'],
      ['vault', 'none'],
    ])
      expect((await call(studio, 'POST', '/api/v1/collections', { id, name: id, burnPolicy })).status).toBe(
        201,
      );
    const currency = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gold',
      name: 'Gold',
      symbol: 'GOLD',
      decimals: 0,
      collection: 'forge',
      metadata,
    });
    expect(currency.status, currency.text).toBe(201);
    for (const user of [alice, bob])
      expect(
        (await call(studio, 'POST', '/api/v1/currencies/gold/mint', { to: user.wallet, amount: '1000' }))
          .status,
      ).toBe(201);
    const settings = await call(studio, 'PUT', '/api/v1/collections/forge/market/settings', {
      royaltyBps: 0,
      currencies: ['gold'],
    });
    expect(settings.status, settings.text).toBe(200);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('item prices at creation: a template once, at most 20 items a unit, only where burns are allowed', async () => {
    const offer = await createOffer();
    expect((await read(`/api/v1/store-offers/${offer.id}`)).price).toEqual([
      { assetId: 'gold', amount: '5' },
      { nft: { name: 'Iron Ore', quantity: 3 } },
    ]);
    const refused = async (path: string, price: unknown[]) => {
      const answer = await call(studio, 'POST', path, {
        name: 'Refused',
        price,
        grants: [{ nft: { name: 'Steel Sword', metadata } }],
        payTo: studio.wallet,
      });
      expect(answer.status, answer.text).toBe(400);
      return answer.body.errors[0].pointer as string;
    };
    const path = '/api/v1/collections/forge/store-offers';
    expect(
      await refused(path, [
        { nft: { name: 'Iron Ore', quantity: 1 } },
        { nft: { name: 'Iron Ore', quantity: 2 } },
      ]),
    ).toBe('/body/price/1/nft/name');
    expect(
      await refused(path, [
        { nft: { name: 'Iron Ore', quantity: 15 } },
        { nft: { name: 'Coal', quantity: 6 } },
      ]),
    ).toBe('/body/price/1/nft/quantity');
    // The contract's own bounds (the validator names the price, by its first branch).
    expect(await refused(path, [{ nft: { name: 'Iron Ore', quantity: 0 } }])).toMatch(/^\/body\/price\/0/);
    expect(
      await refused('/api/v1/collections/vault/store-offers', [{ nft: { name: 'Gem', quantity: 1 } }]),
    ).toBe('/body/price/0/nft');
  });

  it('a purchase paid with items burns them with the payment and mints the grants, one operation; a retry replays it', async () => {
    const offer = await createOffer();
    const ores = await ore(alice.wallet, 4);
    const paying = [ores[2], ores[0], ores[3]];
    const goldBefore = { alice: await gold(alice.wallet), studio: await gold(studio.wallet) };
    const before = await lastEventId();
    const bought = await buy(alice, offer.id, paying, 'ore-1');
    expect(bought.status, bought.text).toBe(201);
    const { purchase, transfers, nfts } = bought.body;
    expect(purchase).toMatchObject({ offerId: offer.id, version: 1, quantity: 1, wallet: alice.wallet });
    expect(purchase.paid).toEqual([
      { assetId: 'gold', amount: '5' },
      ...paying.map((id) => ({ assetId: id, amount: '1' })),
    ]);
    expect(purchase.granted).toEqual([{ assetId: nfts[0].id, amount: '1' }]);
    expect(nfts[0]).toMatchObject({
      name: `Steel Sword ${swords}`,
      owner: alice.wallet,
      collection: 'forge',
    });
    expect(transfers.map((x: { assetId: string; to: string }) => [x.assetId, x.to])).toEqual([
      ['gold', studio.wallet],
      ...paying.map((id) => [id, ZERO]),
    ]);
    // The paid ores are burned, the fourth is still Alice's; the gold went to payTo.
    expect(await owners(ores)).toEqual([null, alice.wallet, null, null]);
    for (const id of paying) expect((await read(`/assets/${id}`)).burned).toBe(true);
    expect(Number(await gold(alice.wallet))).toBe(Number(goldBefore.alice) - 5);
    expect(Number(await gold(studio.wallet))).toBe(Number(goldBefore.studio) + 5);
    const events = await eventsAfter(before);
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'newTransfer',
      'newNFT',
      'storePurchase',
    ]);
    expect(new Set(events.map((e: { operationId?: string }) => e.operationId))).toEqual(
      new Set([bought.body.id]),
    );
    expect(events[5].data).toEqual(purchase);

    // The same key answers the same purchase and burns nothing more; with other items it is refused.
    const mark = await lastEventId();
    const again = await buy(alice, offer.id, paying, 'ore-1');
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(again.body).toEqual(bought.body);
    const reused = await buy(alice, offer.id, [ores[1]], 'ore-1');
    expect([reused.status, reused.body.type]).toEqual([422, '/problems/idempotency-key-reused']);
    expect(await eventsAfter(mark)).toEqual([]);
    expect((await read(`/api/v1/store-offers/${offer.id}`)).sold).toBe(1);
  });

  it('quantities multiply the items; each refusal moves nothing', async () => {
    const offer = await createOffer();
    const free = await createOffer({ price: [{ assetId: 'gold', amount: '1' }] });
    const mine = await ore(alice.wallet, 6);
    const [copper] = await ore(alice.wallet, 1, 'Copper Ore');
    const [foreign] = await ore(alice.wallet, 1, 'Iron Ore', 'mine');
    const [bobs] = await ore(bob.wallet, 1);
    const [burned] = await ore(alice.wallet, 1);
    expect(
      (await call(alice, 'POST', `/api/v1/assets/${burned}/burn`, { from: alice.wallet, amount: '1' }))
        .status,
    ).toBe(201);
    const goldBefore = await gold(alice.wallet);
    const mark = await lastEventId();
    const refusals: [string[], number, string, string?, Record<string, unknown>?][] = [
      [mine.slice(0, 2), 422, '/problems/store-items-mismatch', '/body/items'],
      [mine.slice(0, 4), 422, '/problems/store-items-mismatch', '/body/items/3'],
      [[mine[0], mine[1], copper], 422, '/problems/store-items-mismatch', '/body/items/2'],
      [[foreign, mine[0], mine[1]], 422, '/problems/store-items-mismatch', '/body/items/0'],
      [[mine[0], burned, mine[1]], 422, '/problems/store-items-mismatch', '/body/items/1'],
      [[], 422, '/problems/store-items-mismatch', '/body/items'],
      [mine.slice(0, 3), 422, '/problems/store-items-mismatch', '/body/items', { quantity: 2 }],
      [[mine[0], mine[1], bobs], 409, '/problems/insufficient-balance'],
      [[mine[0], mine[1], 'nft_01JD3ZB2C4D6E8F0G2H4J6K8M0'], 404, '/problems/not-found'],
    ];
    for (const [items, status, type, pointer, body] of refusals) {
      const answer = await buy(alice, offer.id, items, undefined, body);
      expect([answer.status, answer.body.type], answer.text).toEqual([status, type]);
      if (pointer) expect(answer.body.errors[0].pointer).toBe(pointer);
    }
    const extra = await buy(alice, free.id, [mine[0]]);
    expect([extra.status, extra.body.type]).toEqual([422, '/problems/store-items-mismatch']);
    // Nothing moved, nothing counted, no event.
    expect(await gold(alice.wallet)).toBe(goldBefore);
    expect(await owners([...mine, copper, foreign])).toEqual(Array(8).fill(alice.wallet));
    expect(await owners([bobs])).toEqual([bob.wallet]);
    expect((await read(`/api/v1/store-offers/${offer.id}`)).sold).toBe(0);
    expect(await eventsAfter(mark)).toEqual([]);

    // Two units take six ores.
    const two = await buy(alice, offer.id, mine, undefined, { quantity: 2 });
    expect(two.status, two.text).toBe(201);
    expect(two.body.purchase.paid[0]).toEqual({ assetId: 'gold', amount: '10' });
    expect(two.body.nfts).toHaveLength(2);
    expect(await owners(mine)).toEqual(Array(6).fill(null));
  });

  it('a frozen, listed, lent or expired item cannot pay; nothing moves', async () => {
    const offer = await createOffer();
    const ores = await ore(alice.wallet, 5);
    const [lent] = await ore(bob.wallet, 1);
    const goldBefore = await gold(alice.wallet);
    const frozen = await call(studio, 'POST', `/api/v1/assets/${ores[0]}/freeze`);
    expect(frozen.status, frozen.text).toBe(200);
    const listing = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: ores[1],
      currency: 'gold',
      price: '5',
    });
    expect(listing.status, listing.text).toBe(201);
    const lending = await call(bob, 'POST', `/api/v1/assets/${lent}/lend`, {
      from: bob.wallet,
      to: alice.wallet,
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(lending.status, lending.text).toBe(200);
    const [, , a, b, expired] = ores;
    const mark = await lastEventId();
    const cases: [string, string][] = [
      [ores[0], '/problems/asset-frozen'],
      [ores[1], '/problems/item-listed'],
      [lent, '/problems/item-lent'],
    ];
    for (const [item, type] of cases) {
      const answer = await buy(alice, offer.id, [a, b, item]);
      expect([answer.status, answer.body.type], answer.text).toEqual([409, type]);
      expect(answer.body.detail).toContain(item);
    }
    await orm()
      .em.fork()
      .nativeUpdate(Asset, { id: expired }, { expiresAt: new Date(Date.now() - 1000) });
    const late = await buy(alice, offer.id, [a, b, expired]);
    expect([late.status, late.body.type], late.text).toEqual([409, '/problems/item-expired']);
    expect(await gold(alice.wallet)).toBe(goldBefore);
    expect(await owners([...ores, lent])).toEqual(Array(6).fill(alice.wallet));
    expect((await read(`/api/v1/store-offers/${offer.id}`)).sold).toBe(0);
    expect(await eventsAfter(mark)).toEqual([]);
    // Unfrozen, the same item pays.
    expect((await call(studio, 'POST', `/api/v1/assets/${ores[0]}/unfreeze`)).status).toBe(200);
    expect((await buy(alice, offer.id, [a, b, ores[0]])).status).toBe(201);
  });

  it('two purchases racing to pay with the same item: exactly one wins', async () => {
    const offer = await createOffer();
    for (let round = 0; round < 3; round++) {
      const [shared, ...rest] = await ore(alice.wallet, 5);
      const goldBefore = Number(await gold(alice.wallet));
      const answers = await Promise.all([
        buy(alice, offer.id, [shared, rest[0], rest[1]], `race-${round}-a`),
        buy(alice, offer.id, [rest[2], shared, rest[3]], `race-${round}-b`),
      ]);
      // The loser is refused inside its plan (409: its wallet no longer owns the item) or, when the
      // winner committed before it read the item, before its plan (422: the item was burned).
      const lost = answers.find((a) => a.status !== 201);
      expect(
        answers.filter((a) => a.status === 201),
        answers.map((a) => a.text).join('\n'),
      ).toHaveLength(1);
      expect([
        [409, '/problems/insufficient-balance'],
        [422, '/problems/store-items-mismatch'],
      ]).toContainEqual([lost?.status, lost?.body.type]);
      expect(lost?.body.detail).toContain(shared);
      const won = answers.find((a) => a.status === 201);
      const burned = won?.body.purchase.paid.slice(1).map((p: { assetId: string }) => p.assetId);
      const owned = await owners([shared, ...rest]);
      expect(owned.filter((o) => o === null)).toHaveLength(3);
      for (const [i, id] of [shared, ...rest].entries())
        expect(owned[i]).toBe(burned.includes(id) ? null : alice.wallet);
      expect(Number(await gold(alice.wallet))).toBe(goldBefore - 5);
    }
    expect((await read(`/api/v1/store-offers/${offer.id}`)).sold).toBe(3);
  });

  it('new item terms make a new version: a purchase of the old one burns nothing', async () => {
    const offer = await createOffer();
    const changed = await call(studio, 'PATCH', `/api/v1/store-offers/${offer.id}`, {
      price: [{ nft: { name: 'Iron Ore', quantity: 2 } }],
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ version: 2, price: [{ nft: { name: 'Iron Ore', quantity: 2 } }] });
    const ores = await ore(alice.wallet, 3);
    const stale = await buy(alice, offer.id, ores);
    expect([stale.status, stale.body.type]).toEqual([409, '/problems/offer-version-changed']);
    expect(await owners(ores)).toEqual(Array(3).fill(alice.wallet));
    const fresh = await buy(alice, offer.id, ores.slice(0, 2), undefined, { version: 2 });
    expect(fresh.status, fresh.text).toBe(201);
    expect(fresh.body.purchase.paid).toEqual(ores.slice(0, 2).map((id) => ({ assetId: id, amount: '1' })));
    expect(await owners(ores)).toEqual([null, null, alice.wallet]);
  });
});

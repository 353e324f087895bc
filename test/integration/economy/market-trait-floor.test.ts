// Issue 35: the floor per attribute value (`GET /api/v1/collections/{id}/market` with `traitType` and
// `traitValue`) is exact, read from `listing_trait` (src/db/entities/ListingTrait.ts), on both
// databases over HTTP: found behind 1,200 cheaper listings without the value (bulk-inserted in the
// service's format: listing rows and their trait rows), moving when its listing is bought or
// cancelled, following the item's metadata while it is listed, and gone when the item moves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Listing } from '../../../src/db/entities/Listing.ts';
import { ListingTrait } from '../../../src/db/entities/ListingTrait.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const CHEAPER = 1200;
const metadata = (rarity: string) => ({
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'rarity', value: rarity }],
  creator: 'Example Studio',
});

describe.each(DB_KINDS)('the trait floor on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read } = economyHttp(
    () => t,
    () => alice,
  );
  const sword = async (rarity: string) => {
    const made = await call(studio, 'POST', '/api/v1/collections/tiers/mint/batch', {
      items: [{ to: alice.wallet, nft: { name: 'Sword', metadata: metadata(rarity) } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const list = async (assetId: string, price: string) => {
    const listed = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId,
      currency: 'gold',
      price,
    });
    expect(listed.status, listed.text).toBe(201);
    return listed.body.id as string;
  };
  const floor = async (rarity: string) => {
    const stats = await read(
      `/api/v1/collections/tiers/market?currency=gold&traitType=rarity&traitValue=${rarity}`,
    );
    return [stats.floor, stats.floorListingId];
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    const made = await call(studio, 'POST', '/api/v1/collections', {
      id: 'tiers',
      name: 'Tiers',
      mutableAttributes: ['rarity'],
    });
    expect(made.status, made.text).toBe(201);
    const gold = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gold',
      name: 'gold',
      symbol: 'GOLD',
      decimals: 2,
      collection: 'tiers',
      metadata: metadata('coin'),
    });
    expect(gold.status, gold.text).toBe(201);
    const minted = await call(studio, 'POST', '/api/v1/currencies/gold/mint', {
      to: bob.wallet,
      amount: '1000',
    });
    expect(minted.status, minted.text).toBe(201);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('finds the floor of a value behind 1,200 cheaper listings without it, and follows its listings', async () => {
    const [a, b, c] = [await sword('epic'), await sword('epic'), await sword('epic')];
    const [la, lb, lc] = [await list(a, '50'), await list(b, '60'), await list(c, '70')];
    // 1,200 cheaper listings (0.01 to 12.00 gold) of a common sword, as the service writes them.
    const common = await sword('common');
    const at = new Date();
    const ids = Array.from({ length: CHEAPER }, (_, i) => `lst_${String(i).padStart(26, '0')}`);
    const em = orm().em.fork();
    await em.insertMany(
      Listing,
      ids.map((id, i) => ({
        id,
        status: 'active' as const,
        endReason: null,
        sellerUserId: alice.userId,
        sellerWallet: alice.wallet.toLowerCase(),
        assetId: common,
        collectionId: 'tiers',
        amount: 1n,
        currencyId: 'gold',
        price: BigInt(1 + i),
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
        operationId: null,
        closedBy: null,
      })),
    );
    await em.insertMany(
      ListingTrait,
      ids.map((id, i) => ({
        listingId: id,
        traitType: 'rarity',
        traitValue: 'common',
        collectionId: 'tiers',
        currencyId: 'gold',
        price: BigInt(1 + i),
        expiresAt: null,
      })),
    );
    expect(await floor('common')).toEqual(['0.01', ids[0]]);
    expect(await floor('epic')).toEqual(['50', la]);
    expect(await floor('rare')).toEqual([null, null]);

    // Bought, then cancelled: the floor is the next listing with the value.
    const bought = await call(bob, 'POST', `/api/v1/listings/${la}/buy`, { wallet: bob.wallet });
    expect(bought.status, bought.text).toBe(201);
    expect(await floor('epic')).toEqual(['60', lb]);
    const cancelled = await call(alice, 'POST', `/api/v1/listings/${lb}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(await floor('epic')).toEqual(['70', lc]);

    // The listed item's metadata changes: its listing is found under its new value only.
    const patched = await call(studio, 'PATCH', `/api/v1/assets/${c}/metadata`, {
      version: 0,
      attributes: [{ trait_type: 'rarity', value: 'legendary' }],
    });
    expect(patched.status, patched.text).toBe(200);
    expect(await floor('epic')).toEqual([null, null]);
    expect(await floor('legendary')).toEqual(['70', lc]);

    // The item moves: its listing ends, and with it its trait rows.
    const moved = await call(alice, 'POST', '/api/v1/transfer', {
      assetId: c,
      from: alice.wallet,
      to: bob.wallet,
      amount: '1',
    });
    expect(moved.status, moved.text).toBe(201);
    expect(await floor('legendary')).toEqual([null, null]);
    expect(
      await orm()
        .em.fork()
        .count(ListingTrait, { listingId: [la, lb, lc] }),
    ).toBe(0);
  }, 120_000);
});

// Issue 36, items that expire, through the real app over HTTP on both databases: a loan (a rental
// between wallets) returns to its lender at its end, a timed grant (a mint with an end time) is
// burned at its end, each exactly once with its `newTransfer` and `itemExpired` events, however many
// sweeps run at once (and, on PostgreSQL, two instances on one database); a sweep stopped between
// batches leaves the rest to the next; every write path refuses an item past its end time before the
// sweep processed it (the store's guards compare the end time with the plan's own time), and a lent
// item while lent. `GET /assets/{id}` and the wallet listing show the end time. Every response is
// checked against the contract by the test client, every event against the AsyncAPI document by
// `GET /api/v1/events`' contract; the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { Asset } from '../../../src/db/entities/Asset.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import type { Orm } from '../../../src/db/orm.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { createAssetService } from '../../../src/domain/ledger/assets.ts';
import { createExpiryService } from '../../../src/domain/ledger/expiries.ts';
import { createIdempotency } from '../../../src/domain/ledger/idempotency.ts';
import { createLedger } from '../../../src/domain/ledger/index.ts';
import { createLegWriter } from '../../../src/domain/ledger/leg-writer.ts';
import type { LedgerStore, Plan } from '../../../src/domain/ledger/store/plan.ts';
import { createWalletService } from '../../../src/domain/ledger/wallets.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser, TEST_PUBLIC_URL } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
/** Long enough that only the test's own sweeps run. */
const QUIET = {
  MARKET_SWEEP_MS: '3600000',
  RATE_LIMIT_REQUESTS: '100000',
  RATE_LIMIT_USER_REQUESTS: '100000',
};
const ZERO = '0x0000000000000000000000000000000000000000';
const stored = (address: string) => address.toLowerCase() as StoredAddress;

describe.each(DB_KINDS)('items that expire on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let names = 0;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

  /** NFTs minted to `to` by the studio (with an end time when given). */
  async function mint(to: string, count = 1, expiresAt?: string, name?: string): Promise<string[]> {
    const made = await call(studio, 'POST', '/api/v1/collections/arcade/mint/batch', {
      items: Array.from({ length: count }, () => ({
        to,
        nft: { name: name ?? `Pass ${++names}`, metadata, ...(expiresAt && { expiresAt }) },
      })),
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts.map((n: { id: string }) => n.id);
  }
  /** Puts the items' end time in the past, as time would, without a sweep (the loop is quiet). */
  async function endNow(ids: string[]) {
    await orm()
      .em.fork()
      .nativeUpdate(Asset, { id: { $in: ids } }, { expiresAt: new Date(Date.now() - 1000) });
  }
  const expiredEvents = async (assetId: string) =>
    (
      await orm()
        .em.fork()
        .find(OutboxEvent, { type: 'itemExpired', assetId }, { orderBy: { id: 'asc' } })
    ).map((e) => ({
      ...(e.data as Record<string, unknown> & { transferId: string }),
      operationId: e.operationId,
    }));
  const eventsAfter = async (after: string) => (await read(`/api/v1/events?after=${after}&limit=100`)).data;

  beforeAll(async () => {
    t = await startTestApp(kind, QUIET);
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'arcade', name: 'Arcade' })).status).toBe(
      201,
    );
    const coin = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'coin',
      name: 'Coin',
      symbol: 'COIN',
      decimals: 0,
      collection: 'arcade',
      metadata,
    });
    expect(coin.status, coin.text).toBe(201);
    for (const user of [alice, bob])
      expect(
        (await call(studio, 'POST', '/api/v1/currencies/coin/mint', { to: user.wallet, amount: '1000' }))
          .status,
      ).toBe(201);
    const settings = await call(studio, 'PUT', '/api/v1/collections/arcade/market/settings', {
      royaltyBps: 0,
      currencies: ['coin'],
    });
    expect(settings.status, settings.text).toBe(200);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('a loan: the borrower holds it but cannot pass it on; at its end it returns to the lender once', async () => {
    const [sword] = await mint(alice.wallet, 1, undefined, 'Sword');
    const until = inAnHour();
    const lent = await call(
      alice,
      'POST',
      `/api/v1/assets/${sword}/lend`,
      { from: alice.wallet, to: bob.wallet, expiresAt: until },
      'lend-1',
    );
    expect(lent.status, lent.text).toBe(200);
    expect(lent.body).toMatchObject({ owner: bob.wallet, lender: alice.wallet, expiresAt: until });
    // A retry with the same key answers the same, lending nothing twice.
    const again = await call(
      alice,
      'POST',
      `/api/v1/assets/${sword}/lend`,
      { from: alice.wallet, to: bob.wallet, expiresAt: until },
      'lend-1',
    );
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    expect(await read(`/assets/${sword}`)).toMatchObject({
      owner: bob.wallet,
      lender: alice.wallet,
      expiresAt: until,
    });
    const held = (await read(`/wallets/${bob.wallet}/assets?kind=nft`)).data.find(
      (h: { asset: { id: string } }) => h.asset.id === sword,
    );
    expect(held.asset).toMatchObject({ expiresAt: until, lender: alice.wallet });

    // While lent: the borrower's moves are refused, and so is lending it on.
    const lentRefusals = [
      await call(bob, 'POST', '/api/v1/transfer', {
        assetId: sword,
        from: bob.wallet,
        to: alice.wallet,
        amount: '1',
      }),
      await call(bob, 'POST', `/api/v1/assets/${sword}/burn`, { from: bob.wallet, amount: '1' }),
      await call(bob, 'POST', '/api/v1/listings', {
        wallet: bob.wallet,
        assetId: sword,
        currency: 'coin',
        price: '5',
      }),
      await call(bob, 'POST', `/api/v1/assets/${sword}/lend`, {
        from: bob.wallet,
        to: studio.wallet,
        expiresAt: until,
      }),
    ];
    expect(lentRefusals.map((r) => [r.status, r.body.type])).toEqual(
      Array.from({ length: 4 }, () => [409, '/problems/item-lent']),
    );

    // Past its end, not yet swept: refused as expired.
    await endNow([sword]);
    const late = await call(bob, 'POST', '/api/v1/transfer', {
      assetId: sword,
      from: bob.wallet,
      to: alice.wallet,
      amount: '1',
    });
    expect([late.status, late.body.type]).toEqual([409, '/problems/item-expired']);

    const before = await lastEventId();
    const sweeps = await Promise.all([t.app.marketKeeper.sweep(), t.app.marketKeeper.sweep()]);
    expect(sweeps.reduce((n, s) => n + s.itemsExpired, 0)).toBe(1);
    const back = await read(`/assets/${sword}`);
    expect(back.owner).toBe(alice.wallet);
    expect(back).not.toHaveProperty('expiresAt');
    expect(back).not.toHaveProperty('lender');
    const [expired, ...more] = await expiredEvents(sword);
    expect(more).toEqual([]);
    expect(expired).toMatchObject({ holder: bob.wallet, to: alice.wallet, outcome: 'returned' });
    const events = (await eventsAfter(before)).filter(
      (e: { data: { assetId?: string } }) => e.data.assetId === sword,
    );
    expect(events.map((e: { type: string }) => e.type)).toEqual(['newTransfer', 'itemExpired']);
    expect(events[0].data).toMatchObject({ id: expired.transferId, from: bob.wallet, to: alice.wallet });
    expect(events[0].operationId).toBe(events[1].operationId);
    // Its own again: the lender moves it freely; a later sweep finds nothing.
    expect(await t.app.marketKeeper.sweep()).toMatchObject({ itemsExpired: 0 });
    const moved = await call(alice, 'POST', '/api/v1/transfer', {
      assetId: sword,
      from: alice.wallet,
      to: bob.wallet,
      amount: '1',
    });
    expect(moved.status, moved.text).toBe(201);
  });

  it('every write path refuses a timed item past its end before the sweep; then it is burned once', async () => {
    // Created before the end: a listing, an offer for it, a trade offering it, a recipe taking it.
    const [listed, offered, traded, crafted, moved, batched, auctioned, burned] = await mint(
      alice.wallet,
      8,
      inAnHour(),
    );
    const recipe = await call(studio, 'POST', '/api/v1/collections/arcade/recipes', {
      name: 'Melt',
      inputs: [{ nft: { collection: 'arcade', name: `Pass ${names - 4}` } }],
      outputs: [{ assetId: 'coin', amount: '1' }],
    });
    expect(recipe.status, recipe.text).toBe(201);
    const listing = await call(alice, 'POST', '/api/v1/listings', {
      wallet: alice.wallet,
      assetId: listed,
      currency: 'coin',
      price: '5',
    });
    expect(listing.status, listing.text).toBe(201);
    const offer = await call(bob, 'POST', '/api/v1/offers', {
      wallet: bob.wallet,
      assetId: offered,
      currency: 'coin',
      price: '4',
    });
    expect(offer.status, offer.text).toBe(201);
    // A timed item is never escrowed: an auction could outlast it.
    const early = await call(alice, 'POST', '/api/v1/auctions', {
      wallet: alice.wallet,
      assetId: auctioned,
      currency: 'coin',
      reservePrice: '1',
      minIncrement: '1',
      duration: 60,
    });
    expect([early.status, early.body.type]).toEqual([409, '/problems/item-expired']);

    const all = [listed, offered, traded, crafted, moved, batched, auctioned, burned];
    await endNow(all);
    const refusals = {
      transfer: await call(alice, 'POST', '/api/v1/transfer', {
        assetId: moved,
        from: alice.wallet,
        to: bob.wallet,
        amount: '1',
      }),
      batch: await call(alice, 'POST', '/api/v1/transfer/batch', {
        legs: [
          { assetId: 'coin', from: alice.wallet, to: bob.wallet, amount: '1' },
          { assetId: batched, from: alice.wallet, to: bob.wallet, amount: '1' },
        ],
      }),
      trade: await call(alice, 'POST', '/api/v1/trades', {
        fromWallet: alice.wallet,
        toWallet: bob.wallet,
        offer: [{ assetId: traded, amount: '1' }],
        request: [{ assetId: 'coin', amount: '1' }],
      }),
      listing: await call(alice, 'POST', '/api/v1/listings', {
        wallet: alice.wallet,
        assetId: moved,
        currency: 'coin',
        price: '5',
      }),
      accept: await call(alice, 'POST', `/api/v1/offers/${offer.body.id}/accept`, { wallet: alice.wallet }),
      auction: await call(alice, 'POST', '/api/v1/auctions', {
        wallet: alice.wallet,
        assetId: auctioned,
        currency: 'coin',
        reservePrice: '1',
        minIncrement: '1',
        duration: 60,
      }),
      craft: await call(alice, 'POST', `/api/v1/recipes/${recipe.body.id}/craft`, {
        wallet: alice.wallet,
        nfts: [crafted],
      }),
      burn: await call(alice, 'POST', `/api/v1/assets/${burned}/burn`, { from: alice.wallet, amount: '1' }),
      lend: await call(alice, 'POST', `/api/v1/assets/${moved}/lend`, {
        from: alice.wallet,
        to: bob.wallet,
        expiresAt: inAnHour(),
      }),
    };
    for (const [path, refused] of Object.entries(refusals))
      expect([path, refused.status, refused.body.type]).toEqual([path, 409, '/problems/item-expired']);
    // A purchase of its listing finds the seller's side unavailable: nothing moves.
    const buy = await call(bob, 'POST', `/api/v1/listings/${listing.body.id}/buy`, {
      wallet: bob.wallet,
    });
    expect(buy.status, buy.text).toBe(409);
    for (const id of all) expect((await read(`/assets/${id}`)).owner).toBe(alice.wallet);

    const sweep = await t.app.marketKeeper.sweep();
    expect(sweep.itemsExpired).toBe(8);
    for (const id of all) {
      const asset = await read(`/assets/${id}`);
      expect([asset.burned, asset.owner]).toEqual([true, null]);
      const events = await expiredEvents(id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ holder: alice.wallet, to: ZERO, outcome: 'burned' });
    }
    expect(await t.app.marketKeeper.sweep()).toMatchObject({ itemsExpired: 0 });
  });

  it('a sweep stopped between batches leaves the rest to the next; no item expires twice', async () => {
    const ids = await mint(bob.wallet, 5, inAnHour());
    await endNow(ids);
    // One batch of 2, then the process "stops": the next pass takes the other 3.
    const ledger = createLedger({
      database: t.app.database,
      config: { publicUrl: TEST_PUBLIC_URL, idempotencyTtlSeconds: 86_400 },
      secretBox: createSecretBox('expiry-test-secret-0123456789abcdef'),
    });
    expect(await ledger.expiries.expireDue(new Date(), 2)).toBe(2);
    const rest = await Promise.all([t.app.marketKeeper.sweep(), t.app.marketKeeper.sweep()]);
    expect(rest.reduce((n, s) => n + s.itemsExpired, 0)).toBe(3);
    for (const id of ids) expect(await expiredEvents(id)).toHaveLength(1);
  });

  /** A sweep (as another instance's) over `store`, `perPlan` items a plan. */
  function sweeperOver(store: LedgerStore, perPlan?: number) {
    const idempotency = createIdempotency(t.app.database, 60);
    const secretBox = createSecretBox('expiry-test-secret-0123456789abcdef');
    const real = t.app.database.store;
    const assets = createAssetService(
      t.app.database,
      createWalletService(orm(), secretBox),
      idempotency,
      real,
    );
    return createExpiryService(
      t.app.database,
      idempotency,
      store,
      createLegWriter(t.app.database, idempotency, store),
      assets,
      perPlan,
    );
  }
  /** A store that runs `before` once, right before the first plan it is given (between read and plan). */
  function storeRunningFirst(before: () => Promise<unknown>): LedgerStore & { plans: number } {
    const real = t.app.database.store;
    const store = {
      plans: 0,
      async apply(plan: Plan) {
        if (store.plans++ === 0) await before();
        return real.apply(plan);
      },
    };
    return store;
  }

  it('a sweep killed mid-batch (after one commit, before the rest) resumes: each item expires once', async () => {
    const ids = await mint(alice.wallet, 6, inAnHour());
    await endNow(ids);
    // The sweep's service over a store that dies: the 2nd plan (2 items) commits and its answer is
    // lost, every later plan is never sent (as a process killed at that moment).
    const real = t.app.database.store;
    let plans = 0;
    const sent: Promise<unknown>[] = [];
    const dying: LedgerStore = {
      async apply(plan) {
        const n = ++plans;
        if (n > 2) throw new Error('killed');
        const applying = real.apply(plan);
        sent.push(applying);
        const outcome = await applying;
        if (n === 2) throw new Error('killed after the commit');
        return outcome;
      },
    };
    await expect(sweeperOver(dying, 2).expireDue(new Date(), 100)).rejects.toThrow(/killed/);
    await Promise.allSettled(sent);
    const committed = (await Promise.all(ids.map(expiredEvents))).filter((e) => e.length === 1).length;
    expect(committed).toBe(4);
    // The restarted keeper expires the other two, and not the four again.
    expect((await t.app.marketKeeper.sweep()).itemsExpired).toBe(2);
    for (const id of ids) expect(await expiredEvents(id)).toHaveLength(1);
    expect(await checkInvariants(orm())).toEqual([]);
  });

  it('a batch: one plan for many items, each its own events and operation id', async () => {
    const ids = await mint(bob.wallet, 7, inAnHour());
    await endNow(ids);
    const store = storeRunningFirst(async () => undefined);
    const before = await lastEventId();
    expect(await sweeperOver(store).expireDue(new Date(), 100)).toBe(7);
    expect(store.plans).toBe(1);
    const events = await orm()
      .em.fork()
      .find(OutboxEvent, { assetId: { $in: ids }, id: { $gt: Number(before) } }, { orderBy: { id: 'asc' } });
    const byOperation = Map.groupBy(events, (e) => e.operationId);
    expect(byOperation.size).toBe(7);
    for (const group of byOperation.values())
      expect(group.map((e) => [e.type, e.assetId])).toEqual([
        ['newTransfer', group[0].assetId],
        ['itemExpired', group[0].assetId],
      ]);
  });

  it('a batch with an item another instance expired first: the others still expire, that one once', async () => {
    const ids = await mint(alice.wallet, 5, inAnHour());
    await endNow(ids);
    // The third ended first: between this sweep's read and its plan, "another instance" (one item a
    // plan, the oldest first) expires it alone.
    await orm()
      .em.fork()
      .nativeUpdate(Asset, { id: ids[2] }, { expiresAt: new Date(Date.now() - 5000) });
    const other = sweeperOver(t.app.database.store, 1);
    let otherExpired = 0;
    const store = storeRunningFirst(async () => {
      otherExpired = await other.expireDue(new Date(), 1);
    });
    const expired = await sweeperOver(store).expireDue(new Date(), 100);
    expect([otherExpired, expired]).toEqual([1, 4]);
    // Refused once (the third was expired), planned again without it.
    expect(store.plans).toBe(2);
    for (const id of ids) expect(await expiredEvents(id)).toHaveLength(1);
    expect(await t.app.marketKeeper.sweep()).toMatchObject({ itemsExpired: 0 });
    expect(await checkInvariants(orm())).toEqual([]);
  });

  it('a batch with items moved or burnt between the read and the plan: each expires as it is then', async () => {
    const [kept, moved, burnt] = await mint(alice.wallet, 3, inAnHour());
    await endNow([kept, moved, burnt]);
    // Between the read and the plan: one NFT moves to bob and another is burnt by plans without
    // guards (as the chain projection applies an on-chain transfer as seen).
    const real = t.app.database.store;
    const moveTo = async (assetId: string, to: string) => {
      const at = new Date();
      const outcome = await real.apply({
        at,
        guards: [],
        balances: [
          { assetId, wallet: stored(alice.wallet), delta: -1n },
          ...(to === ZERO ? [] : [{ assetId, wallet: stored(to), delta: 1n }]),
        ],
        owners: [{ assetId, owner: stored(to) }],
      });
      expect(outcome.outcome).toBe('applied');
    };
    const store = storeRunningFirst(async () => {
      await moveTo(moved, bob.wallet);
      await moveTo(burnt, ZERO);
    });
    expect(await sweeperOver(store).expireDue(new Date(), 100)).toBe(3);
    expect(store.plans).toBe(2);
    expect((await expiredEvents(kept))[0]).toMatchObject({ holder: alice.wallet, outcome: 'burned' });
    expect((await expiredEvents(moved))[0]).toMatchObject({ holder: bob.wallet, outcome: 'burned' });
    // Burnt before the sweep: its end time is cleared, nothing to announce.
    expect(await expiredEvents(burnt)).toEqual([]);
    const rows = await orm()
      .em.fork()
      .find(Asset, { id: { $in: [kept, moved, burnt] } }, { fields: ['owner', 'expiresAt'] });
    expect(rows.map((r) => [r.owner, r.expiresAt ?? null])).toEqual(
      Array.from({ length: 3 }, () => [ZERO, null]),
    );
    expect(await t.app.marketKeeper.sweep()).toMatchObject({ itemsExpired: 0 });
    expect(await checkInvariants(orm())).toEqual([]);
  });

  it('end times are checked: in the future for a mint, within a year for a loan, NFTs only', async () => {
    const past = await call(studio, 'POST', '/api/v1/collections/arcade/mint/batch', {
      items: [
        {
          to: alice.wallet,
          nft: { name: 'Old', metadata, expiresAt: new Date(Date.now() - 1000).toISOString() },
        },
      ],
    });
    expect([past.status, past.body.errors?.[0]?.pointer]).toEqual([400, '/body/items/0/nft/expiresAt']);
    const [gem] = await mint(alice.wallet);
    const far = await call(alice, 'POST', `/api/v1/assets/${gem}/lend`, {
      from: alice.wallet,
      to: bob.wallet,
      expiresAt: new Date(Date.now() + 400 * 86_400_000).toISOString(),
    });
    expect([far.status, far.body.errors?.[0]?.pointer]).toEqual([400, '/body/expiresAt']);
    const currency = await call(alice, 'POST', '/api/v1/assets/coin/lend', {
      from: alice.wallet,
      to: bob.wallet,
      expiresAt: inAnHour(),
    });
    expect(currency.status, currency.text).toBe(400);
    const notMine = await call(bob, 'POST', `/api/v1/assets/${gem}/lend`, {
      from: alice.wallet,
      to: bob.wallet,
      expiresAt: inAnHour(),
    });
    expect([notMine.status, notMine.body.type]).toEqual([403, '/problems/wallet-not-controlled']);
    const single = await call(studio, 'POST', '/api/v1/nft/create', {
      name: 'Season Pass',
      metadata,
      collection: 'arcade',
      to: studio.wallet,
      expiresAt: inAnHour(),
    });
    expect(single.status, single.text).toBe(201);
    expect(single.body.expiresAt).toBeDefined();
    expect(single.body.lender).toBeNull();
  });

  it('a store rental: a soulbound timed grant, its end an hour after the purchase', async () => {
    const created = await call(studio, 'POST', '/api/v1/collections/arcade/store-offers', {
      name: 'Glider for an hour',
      price: [{ assetId: 'coin', amount: '3' }],
      grants: [{ nft: { name: 'Glider', metadata, soulbound: true, expiresInSeconds: 3600 } }],
      payTo: studio.wallet,
    });
    expect(created.status, created.text).toBe(201);
    const before = Date.now();
    const bought = await call(bob, 'POST', `/api/v1/store-offers/${created.body.id}/purchase`, {
      wallet: bob.wallet,
      version: 1,
    });
    expect(bought.status, bought.text).toBe(201);
    const glider = bought.body.purchase.granted[0].assetId as string;
    const asset = await read(`/assets/${glider}`);
    const end = new Date(asset.expiresAt).getTime();
    expect(end).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(end).toBeLessThanOrEqual(Date.now() + 3_600_000);
    const moved = await call(bob, 'POST', '/api/v1/transfer', {
      assetId: glider,
      from: bob.wallet,
      to: alice.wallet,
      amount: '1',
    });
    expect([moved.status, moved.body.type]).toEqual([409, '/problems/asset-soulbound']);
  });

  if (kind === 'postgres') {
    it('two instances on one database sweeping together expire each item once', async () => {
      const second = await startTestApp(kind, QUIET, { databaseUrl: t.app.config.databaseUrl });
      try {
        const ids = await mint(alice.wallet, 30, inAnHour());
        await endNow(ids);
        const sweeps = await Promise.all([
          t.app.marketKeeper.sweep(),
          second.app.marketKeeper.sweep(),
          t.app.marketKeeper.sweep(),
          second.app.marketKeeper.sweep(),
        ]);
        expect(sweeps.reduce((n, s) => n + s.itemsExpired, 0)).toBe(30);
        for (const id of ids) expect(await expiredEvents(id)).toHaveLength(1);
      } finally {
        await second.close();
      }
    }, 90_000); // a second app's start-up and four sweeps over one batch: 1 s alone, past 30 s in a loaded CI run
  }
});

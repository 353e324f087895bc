// Issue 36: claim codes through the real app over HTTP, on both databases: a studio's codes (random
// single-use ones, a chosen multi-use one with a per-wallet limit and an expiry), shown once and
// stored hashed; a redemption as one operation (the grants minted, the redemption counted, a replay
// by Idempotency-Key), single use under a race (exactly one wins), the per-wallet and total limits,
// expired and disabled codes, codes hidden from the store, and guessing limited per user and per
// client address. Responses are checked against the contract; the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreOffer } from '../../../src/db/entities/StoreOffer.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { CLAIM_GUESSES_PER_ADDRESS, CLAIM_GUESSES_PER_USER } from '../../../src/http/claim-code-throttle.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };

describe.each(DB_KINDS)('claim codes on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let rival: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let carol: HttpUser;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read } = economyHttp(
    () => t,
    () => alice,
  );
  const balance = async (asset: string, wallet: string) =>
    (await read(`/assets/${asset}/owners`)).data.find(
      (o: { wallet: string }) => o.wallet.toLowerCase() === wallet.toLowerCase(),
    )?.balance ?? '0';
  const create = async (body: Record<string, unknown>) => {
    const made = await call(studio, 'POST', '/api/v1/collections/promo/claim-codes', {
      grants: [{ assetId: 'gems', amount: '25' }],
      ...body,
    });
    expect(made.status, made.text).toBe(201);
    return made.body.codes as { code: string; claimCode: { id: string; prefix: string } }[];
  };
  const redeem = (user: HttpUser, code: string, key?: string) =>
    call(user, 'POST', '/api/v1/claim-codes/redeem', { wallet: user.wallet, code }, key);

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, rival, alice, bob, carol] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
      httpUser(t),
    ]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'promo', name: 'Promo' })).status).toBe(
      201,
    );
    const gems = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gems',
      name: 'Gems',
      symbol: 'GEM',
      decimals: 0,
      collection: 'promo',
      metadata,
    });
    expect(gems.status, gems.text).toBe(201);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('creates codes shown once and stored hashed; only the collection’s studio', async () => {
    expect(
      (
        await call(rival, 'POST', '/api/v1/collections/promo/claim-codes', {
          grants: [{ assetId: 'gems', amount: '1' }],
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await call(alice, 'POST', '/api/v1/collections/promo/claim-codes', {
          grants: [{ assetId: 'gems', amount: '1' }],
        })
      ).status,
    ).toBe(403);
    const codes = await create({ count: 3 });
    expect(codes).toHaveLength(3);
    expect(new Set(codes.map((c) => c.code)).size).toBe(3);
    for (const { code, claimCode } of codes) {
      expect(code).toMatch(/^[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$/);
      expect(claimCode).toMatchObject({
        prefix: code.slice(0, 4),
        maxRedemptions: 1,
        perWalletLimit: 1,
        redeemed: 0,
      });
    }
    const seen = await call(studio, 'GET', `/api/v1/claim-codes/${codes[0].claimCode.id}`);
    expect(seen.status).toBe(200);
    expect(JSON.stringify(seen.body)).not.toContain(codes[0].code);
    expect((await call(rival, 'GET', `/api/v1/claim-codes/${codes[0].claimCode.id}`)).status).toBe(403);
    // Only the hash is kept.
    const rows = await orm()
      .em.fork()
      .find(StoreOffer, { codeHash: { $ne: null } });
    const dump = JSON.stringify(rows);
    for (const { code } of codes) expect(dump).not.toContain(code);
    // A code is no store offer: not listed, not readable or buyable as one.
    const listed = await read('/api/v1/collections/promo/store-offers');
    expect(listed.data).toEqual([]);
    expect((await call(alice, 'GET', `/api/v1/store-offers/${codes[0].claimCode.id}`)).status).toBe(404);
    const bought = await call(alice, 'POST', `/api/v1/store-offers/${codes[0].claimCode.id}/purchase`, {
      wallet: alice.wallet,
      version: 1,
    });
    expect(bought.status).toBe(404);
  });

  it('redeems a single-use code once, in one operation; a retry replays; racing wallets: exactly one', async () => {
    const [first, second] = await create({ count: 2 });
    const before = await balance('gems', alice.wallet);
    const redeemed = await redeem(alice, first.code.toLowerCase(), 'redeem-1');
    expect(redeemed.status, redeemed.text).toBe(201);
    expect(redeemed.body.purchase).toMatchObject({
      offerId: first.claimCode.id,
      paid: [],
      granted: [{ assetId: 'gems', amount: '25' }],
      wallet: alice.wallet,
    });
    expect(Number(await balance('gems', alice.wallet))).toBe(Number(before) + 25);
    const again = await redeem(alice, first.code.toLowerCase(), 'redeem-1');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(redeemed.body);
    const used = await redeem(bob, first.code);
    expect(used.status).toBe(409);
    expect(used.body.type).toBe('/problems/offer-limit-reached');
    expect(Number(await balance('gems', alice.wallet))).toBe(Number(before) + 25);
    const race = await Promise.all([redeem(bob, second.code), redeem(carol, second.code)]);
    expect(race.map((r) => r.status).sort()).toEqual([201, 409]);
    expect((await call(studio, 'GET', `/api/v1/claim-codes/${second.claimCode.id}`)).body.redeemed).toBe(1);
  });

  it('a chosen multi-use code keeps its total and per-wallet limits; expired and disabled codes refuse', async () => {
    const [winter] = await create({ code: 'winter-gems-2026', maxRedemptions: 2, perWalletLimit: 1 });
    expect(winter.code).toBe('WINTER-GEMS-2026');
    const taken = await call(studio, 'POST', '/api/v1/collections/promo/claim-codes', {
      grants: [{ nft: { name: 'Banner', metadata } }],
      code: 'WINTER-gems-2026',
    });
    expect(taken.status).toBe(409);
    expect(taken.body.type).toBe('/problems/claim-code-exists');
    expect((await redeem(alice, 'WINTER-GEMS-2026')).status).toBe(201);
    expect((await redeem(alice, 'WINTER-GEMS-2026')).body.type).toBe('/problems/offer-limit-reached');
    expect((await redeem(bob, 'WINTER-GEMS-2026')).status).toBe(201);
    expect((await redeem(carol, 'WINTER-GEMS-2026')).body.type).toBe('/problems/offer-limit-reached');

    const [soon] = await create({ expiresAt: new Date(Date.now() + 300).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const expired = await redeem(alice, soon.code);
    expect(expired.status).toBe(409);
    expect(expired.body.type).toBe('/problems/offer-not-available');

    const [leaked] = await create({ grants: [{ nft: { name: 'Banner', metadata } }] });
    const closed = await call(studio, 'PATCH', `/api/v1/store-offers/${leaked.claimCode.id}`, {
      status: 'closed',
    });
    expect(closed.status, closed.text).toBe(200);
    expect((await redeem(alice, leaked.code)).body.type).toBe('/problems/offer-not-available');
  });

  it('limits guessing per user and per client address', async () => {
    const [valid] = await create({ maxRedemptions: 10 });
    const guesser = await httpUser(t);
    for (let i = 0; i < CLAIM_GUESSES_PER_USER; i++) {
      const miss = await redeem(guesser, `NOPE-${i}`);
      expect(miss.status).toBe(404);
      expect(miss.body.type).toBe('/problems/claim-code-invalid');
    }
    const limited = await redeem(guesser, valid.code);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeTruthy();
    // Every test user calls from 127.0.0.1: others' misses use up the address's guesses too.
    let misses = CLAIM_GUESSES_PER_USER;
    while (misses < CLAIM_GUESSES_PER_ADDRESS) {
      const other = await httpUser(t);
      for (let i = 0; i < CLAIM_GUESSES_PER_USER && misses < CLAIM_GUESSES_PER_ADDRESS; i++, misses++)
        expect((await redeem(other, `WRONG-${misses}`)).status).toBe(404);
    }
    const fresh = await httpUser(t);
    expect((await redeem(fresh, valid.code)).status).toBe(429);
  });
});

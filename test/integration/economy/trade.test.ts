// Issue 21: two-party trades through the real app over HTTP, on both databases: a proposal (checked
// early, reserving nothing), visibility to the two parties only, acceptance as one plan (both sides'
// transfers under one op id, consecutive events), replay, cancellation by either party, expiry, every
// refusal with nothing moved, and an acceptance racing a cancellation (exactly one wins). Every
// response is checked against the contract by the test client; the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import { Trade } from '../../../src/db/entities/Trade.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
const DAY_MS = 86_400_000;

describe.each(DB_KINDS)('trades on %s', (kind) => {
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

  const gold = async (wallet: string) =>
    (await read('/assets/gold/owners')).data.find((o: { wallet: string }) => o.wallet === wallet)?.balance ??
    '0';
  const owner = async (id: string) => (await read(`/assets/${id}`)).owner;
  const sword = async (to: string) => {
    const made = await call(studio, 'POST', '/api/v1/collections/market/mint/batch', {
      items: [{ to, nft: { name: 'Sword', metadata } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const mintGold = async (to: string, amount: string) => {
    const minted = await call(studio, 'POST', '/api/v1/currencies/gold/mint', { to, amount });
    expect(minted.status, minted.text).toBe(201);
  };
  const propose = async (swordId: string, price = '100', body: Record<string, unknown> = {}) => {
    const proposed = await call(alice, 'POST', '/api/v1/trades', {
      fromWallet: alice.wallet,
      toWallet: bob.wallet,
      offer: [{ assetId: swordId, amount: '1' }],
      request: [{ assetId: 'gold', amount: price }],
      ...body,
    });
    expect(proposed.status, proposed.text).toBe(201);
    return proposed.body.id as string;
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, alice, bob, carol] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
      httpUser(t),
    ]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'market', name: 'Market' })).status).toBe(
      201,
    );
    const created = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gold',
      name: 'Gold',
      symbol: 'GOLD',
      decimals: 2,
      collection: 'market',
      metadata,
    });
    expect(created.status, created.text).toBe(201);
    await mintGold(bob.wallet, '1000');
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('trades a Sword for 100 gold: proposal, parties-only reads, one settlement, replay', async () => {
    const swordId = await sword(alice.wallet);
    const proposal = {
      fromWallet: alice.wallet,
      toWallet: bob.wallet,
      offer: [{ assetId: swordId, amount: '1' }],
      request: [{ assetId: 'gold', amount: '100.00' }],
    };
    const proposed = await call(alice, 'POST', '/api/v1/trades', proposal, 'p1');
    expect(proposed.status, proposed.text).toBe(201);
    const id = proposed.body.id;
    expect(proposed.headers.get('location')).toBe(`/api/v1/trades/${id}`);
    expect(proposed.body).toMatchObject({
      status: 'open',
      proposer: alice.userId,
      fromWallet: alice.wallet,
      toWallet: bob.wallet,
      request: [{ assetId: 'gold', amount: '100' }],
      operationId: null,
      closedBy: null,
    });
    const life = Date.parse(proposed.body.expiresAt) - Date.parse(proposed.body.createdAt);
    expect(life).toBe(DAY_MS);
    const replayed = await call(alice, 'POST', '/api/v1/trades', proposal, 'p1');
    expect([replayed.status, replayed.body.id]).toEqual([201, id]);
    // Only the parties see it.
    expect((await call(bob, 'GET', `/api/v1/trades/${id}`)).body).toEqual(proposed.body);
    expect((await call(carol, 'GET', `/api/v1/trades/${id}`)).status).toBe(404);
    expect((await call(carol, 'GET', '/api/v1/trades')).body.data).toEqual([]);
    const bobs = await call(bob, 'GET', '/api/v1/trades?status=open');
    expect(bobs.body.data.map((trade: { id: string }) => trade.id)).toContain(id);

    const before = await lastEventId();
    const accepted = await call(bob, 'POST', `/api/v1/trades/${id}/accept`, undefined, 'a1');
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body.trade).toMatchObject({
      status: 'accepted',
      operationId: accepted.body.id,
      closedBy: bob.userId,
    });
    expect(accepted.body.transfers).toMatchObject([
      { assetId: swordId, from: alice.wallet, to: bob.wallet, amount: '1' },
      { assetId: 'gold', from: bob.wallet, to: alice.wallet, amount: '100' },
    ]);
    expect(await owner(swordId)).toBe(bob.wallet);
    expect(await gold(alice.wallet)).toBe('100');
    const events = (await read(`/api/v1/events?after=${before}&limit=100`)).data;
    expect(events.map((e: { type: string; data: { id: string } }) => [e.type, e.data.id])).toEqual(
      accepted.body.transfers.map((tr: { id: string }) => ['newTransfer', tr.id]),
    );
    expect(events.map((e: { operationId?: string }) => e.operationId)).toEqual(
      events.map(() => accepted.body.id),
    );
    const again = await call(bob, 'POST', `/api/v1/trades/${id}/accept`, undefined, 'a1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(accepted.body);
    expect((await read(`/api/v1/trades/${id}`)).status).toBe('accepted');
    const twice = await call(bob, 'POST', `/api/v1/trades/${id}/accept`, undefined, 'a2');
    expect([twice.status, twice.body.type]).toEqual([409, '/problems/trade-not-open']);
    const late = await call(alice, 'POST', `/api/v1/trades/${id}/cancel`);
    expect([late.status, late.body.type]).toEqual([409, '/problems/trade-not-open']);
    expect(await gold(alice.wallet)).toBe('100');
  });

  it('refuses a bad proposal with a clear problem and creates nothing', async () => {
    const swordId = await sword(alice.wallet);
    const base = {
      fromWallet: alice.wallet,
      toWallet: bob.wallet,
      offer: [{ assetId: swordId, amount: '1' }],
      request: [{ assetId: 'gold', amount: '5' }],
    };
    const bobsSword = await sword(bob.wallet);
    const cases: [HttpUser, unknown, number, string, string?][] = [
      [carol, base, 403, '/problems/wallet-not-controlled'],
      [alice, { ...base, toWallet: alice.wallet }, 400, '/problems/validation-failed'],
      [
        alice,
        { ...base, offer: [{ assetId: 'silver', amount: '1' }] },
        404,
        '/problems/not-found',
        'Offer 0: ',
      ],
      [
        alice,
        { ...base, request: [{ assetId: 'gold', amount: '0.001' }] },
        400,
        '/problems/invalid-amount',
        'Request 0: ',
      ],
      [alice, { ...base, offer: [{ assetId: swordId, amount: '2' }] }, 400, '/problems/invalid-amount'],
      [
        alice,
        { ...base, offer: [{ assetId: bobsSword, amount: '1' }] },
        409,
        '/problems/insufficient-balance',
        'Offer 0: ',
      ],
      [
        alice,
        { ...base, offer: [{ assetId: 'gold', amount: '1000000' }] },
        409,
        '/problems/insufficient-balance',
      ],
      [alice, { ...base, expiresIn: 604_801 }, 400, '/problems/validation-failed'],
      [alice, { ...base, request: [] }, 400, '/problems/validation-failed'],
    ];
    for (const [user, body, status, type, detail] of cases) {
      const refused = await call(user, 'POST', '/api/v1/trades', body);
      expect([refused.status, refused.body.type], refused.text).toEqual([status, type]);
      if (detail) expect(refused.body.detail).toContain(detail);
    }
    await orm().em.fork().nativeUpdate(Asset, { id: swordId }, { frozen: true });
    const frozen = await call(alice, 'POST', '/api/v1/trades', base);
    expect([frozen.status, frozen.body.type]).toEqual([409, '/problems/asset-frozen']);
    await orm().em.fork().nativeUpdate(Asset, { id: swordId }, { frozen: false, soulbound: true });
    const soulbound = await call(alice, 'POST', '/api/v1/trades', base);
    expect([soulbound.status, soulbound.body.type]).toEqual([409, '/problems/asset-soulbound']);
    expect((await call(alice, 'GET', '/api/v1/trades?status=open')).body.data).toEqual([]);
  });

  it('refuses a bad acceptance and moves nothing', async () => {
    const swordId = await sword(alice.wallet);
    const bobsGold = await gold(bob.wallet);
    const pricey = await propose(swordId, '100000');
    const cases: [HttpUser, number, string, string?][] = [
      [alice, 403, '/problems/wallet-not-controlled'],
      [carol, 404, '/problems/not-found'],
      [bob, 409, '/problems/insufficient-balance', 'Request 0: '],
    ];
    for (const [user, status, type, detail] of cases) {
      const refused = await call(user, 'POST', `/api/v1/trades/${pricey}/accept`);
      expect([refused.status, refused.body.type], refused.text).toEqual([status, type]);
      if (detail) expect(refused.body.detail).toContain(detail);
    }
    expect(await owner(swordId)).toBe(alice.wallet);
    expect((await call(bob, 'POST', `/api/v1/trades/${pricey}/cancel`)).status).toBe(200);
    // The offer is only guaranteed at acceptance: the Sword moved away meanwhile.
    const moved = await propose(swordId);
    const away = await call(alice, 'POST', '/api/v1/transfer', {
      assetId: swordId,
      from: alice.wallet,
      to: carol.wallet,
      amount: '1',
    });
    expect(away.status, away.text).toBe(201);
    const gone = await call(bob, 'POST', `/api/v1/trades/${moved}/accept`);
    expect([gone.status, gone.body.type, gone.body.detail]).toEqual([
      409,
      '/problems/insufficient-balance',
      `Offer 0: ${alice.wallet} does not own ${swordId}.`,
    ]);
    // Frozen after the proposal.
    const other = await sword(alice.wallet);
    const frozenTrade = await propose(other);
    await orm().em.fork().nativeUpdate(Asset, { id: other }, { frozen: true });
    const frozen = await call(bob, 'POST', `/api/v1/trades/${frozenTrade}/accept`);
    await orm().em.fork().nativeUpdate(Asset, { id: other }, { frozen: false });
    expect([frozen.status, frozen.body.type]).toEqual([409, '/problems/asset-frozen']);
    expect(await owner(other)).toBe(alice.wallet);
    expect(await gold(bob.wallet)).toBe(bobsGold);
  });

  it('expires: reads as expired, cannot be accepted or cancelled', async () => {
    const swordId = await sword(alice.wallet);
    const id = await propose(swordId, '1', { expiresIn: 60 });
    await orm()
      .em.fork()
      .nativeUpdate(Trade, { id }, { expiresAt: new Date(Date.now() - 1000) });
    expect((await read(`/api/v1/trades/${id}`)).status).toBe('expired');
    const expired = (await call(bob, 'GET', '/api/v1/trades?status=expired')).body.data;
    expect(expired.map((trade: { id: string }) => trade.id)).toEqual([id]);
    const accept = await call(bob, 'POST', `/api/v1/trades/${id}/accept`);
    expect([accept.status, accept.body.type, accept.body.detail]).toEqual([
      409,
      '/problems/trade-not-open',
      `The trade ${id} has expired.`,
    ]);
    const cancel = await call(alice, 'POST', `/api/v1/trades/${id}/cancel`);
    expect([cancel.status, cancel.body.type]).toEqual([409, '/problems/trade-not-open']);
    expect(await owner(swordId)).toBe(alice.wallet);
  });

  it('either party cancels; an acceptance racing a cancellation: exactly one wins', async () => {
    const swordId = await sword(alice.wallet);
    const refused = await propose(swordId);
    const byBob = await call(bob, 'POST', `/api/v1/trades/${refused}/cancel`);
    expect(byBob.status, byBob.text).toBe(200);
    expect(byBob.body).toMatchObject({ status: 'cancelled', closedBy: bob.userId, operationId: null });
    const withdrawn = await propose(swordId);
    expect((await call(alice, 'POST', `/api/v1/trades/${withdrawn}/cancel`)).body.closedBy).toBe(
      alice.userId,
    );
    expect((await call(carol, 'POST', `/api/v1/trades/${withdrawn}/cancel`)).status).toBe(404);
    for (let round = 0; round < 4; round++) {
      const id = await propose(swordId, '1');
      const canceller = round % 2 === 0 ? alice : bob;
      const [accept, cancel] = await Promise.all([
        call(bob, 'POST', `/api/v1/trades/${id}/accept`),
        call(canceller, 'POST', `/api/v1/trades/${id}/cancel`),
      ]);
      const statuses = [accept.status, cancel.status];
      expect(
        [
          [201, 409],
          [409, 200],
        ],
        `${accept.text} ${cancel.text}`,
      ).toContainEqual(statuses);
      const final = await read(`/api/v1/trades/${id}`);
      expect(final.status).toBe(accept.status === 201 ? 'accepted' : 'cancelled');
      if (accept.status === 201) {
        expect(await owner(swordId)).toBe(bob.wallet);
        // Bob gives it back for the next round.
        const back = await call(bob, 'POST', '/api/v1/transfer', {
          assetId: swordId,
          from: bob.wallet,
          to: alice.wallet,
          amount: '1',
        });
        expect(back.status, back.text).toBe(201);
      } else expect(await owner(swordId)).toBe(alice.wallet);
    }
  });
});

// Issue 36, timed currency grants (lots), through the real app over HTTP on both databases: a mint
// with `expiresAt` and a store grant with `expiresInSeconds` make a lot; every debit (a transfer, a
// store purchase's payment, a burn) spends the wallet's live lots first, soonest end first, and the
// units taken keep their end time in the receiving wallet; units past their end never move and are
// never escrowed; the sweep burns what is left of each lot once, however many sweeps run at once,
// with its `newTransfer` and `itemExpired` (with `amount`) events. Every response is checked against
// the contract by the test client, the events against it through `GET /api/v1/events`; the ledger's
// invariants (with `sum(lots) + reserved <= balance`) after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CurrencyLot } from '../../../src/db/entities/CurrencyLot.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
/** Long enough that only the test's own sweeps run. */
const QUIET = {
  MARKET_SWEEP_MS: '3600000',
  RATE_LIMIT_REQUESTS: '100000',
  RATE_LIMIT_USER_REQUESTS: '100000',
};
const ZERO = '0x0000000000000000000000000000000000000000';

describe.each(DB_KINDS)('timed currency grants on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let currencies = 0;

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );
  const inAnHour = (minutes = 60) => new Date(Date.now() + minutes * 60_000).toISOString();

  /** A new currency of the collection `season`. */
  async function currency(): Promise<string> {
    const id = `gem-${++currencies}`;
    const made = await call(studio, 'POST', '/api/v1/currencies', {
      id,
      name: id,
      symbol: 'GEM',
      decimals: 0,
      collection: 'season',
      metadata,
    });
    expect(made.status, made.text).toBe(201);
    return id;
  }
  async function mint(id: string, to: string, amount: string, expiresAt?: string) {
    const minted = await call(studio, 'POST', `/api/v1/currencies/${id}/mint`, {
      to,
      amount,
      ...(expiresAt && { expiresAt }),
    });
    expect(minted.status, minted.text).toBe(201);
  }
  /** A wallet's lots of a currency, soonest end first: [amount, end time]. */
  async function lotsOf(assetId: string, wallet: string): Promise<[string, string][]> {
    const rows = await orm()
      .em.fork()
      .find(
        CurrencyLot,
        { assetId, wallet: wallet.toLowerCase() },
        { orderBy: { expiresAt: 'asc', id: 'asc' } },
      );
    return rows.map((row) => [String(row.amount), (row.expiresAt as Date).toISOString()]);
  }
  const balance = async (asset: string, wallet: string) =>
    (await read(`/assets/${asset}/owners`)).data.find(
      (o: { wallet: string }) => o.wallet.toLowerCase() === wallet.toLowerCase(),
    )?.balance ?? '0';
  /** Puts the lots' end time in the past, as time would, without a sweep (the loop is quiet). */
  const endNow = (assetId: string) =>
    orm()
      .em.fork()
      .nativeUpdate(CurrencyLot, { assetId }, { expiresAt: new Date(Date.now() - 1000) });
  const send = (from: HttpUser, assetId: string, to: string, amount: string) =>
    call(from, 'POST', '/api/v1/transfer', { assetId, from: from.wallet, to, amount });

  beforeAll(async () => {
    t = await startTestApp(kind, QUIET);
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    const made = await call(studio, 'POST', '/api/v1/collections', { id: 'season', name: 'Season' });
    expect(made.status, made.text).toBe(201);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('a grant is spent first and moves with its units; past its end it never moves; the sweep burns the rest once', async () => {
    const gem = await currency();
    const soon = inAnHour(30);
    const later = inAnHour(90);
    await mint(gem, alice.wallet, '100');
    await mint(gem, alice.wallet, '20', later);
    await mint(gem, alice.wallet, '10', soon);
    expect(await lotsOf(gem, alice.wallet)).toEqual([
      ['10', soon],
      ['20', later],
    ]);
    // A transfer of 15: the 10 ending soonest, then 5 of the later lot, each keeping its end.
    const sent = await send(alice, gem, bob.wallet, '15');
    expect(sent.status, sent.text).toBe(201);
    expect(await lotsOf(gem, alice.wallet)).toEqual([['15', later]]);
    expect(await lotsOf(gem, bob.wallet)).toEqual([
      ['10', soon],
      ['5', later],
    ]);
    // The wallet listings show the timed part by end time.
    const held = async (path: string, wallet: string) =>
      (await read(path)).data.find(
        (h: { asset: { id: string }; wallet?: string }) =>
          h.asset.id === gem && (h.wallet ?? wallet) === wallet,
      );
    expect(await held(`/wallets/${bob.wallet}/assets?kind=fungible`, bob.wallet)).toMatchObject({
      balance: '15',
      expiring: [
        { amount: '10', expiresAt: soon },
        { amount: '5', expiresAt: later },
      ],
    });
    const mine = await call(alice, 'GET', '/api/v1/assets?kind=fungible', undefined);
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.data.find((h: { asset: { id: string } }) => h.asset.id === gem)).toMatchObject({
      balance: '115',
      expiring: [{ amount: '15', expiresAt: later }],
    });
    expect(await held(`/wallets/${alice.wallet}/assets?kind=nft`, alice.wallet)).toBeUndefined();

    // Past their end, not swept yet: those units are not Alice's to send (115 held, 100 free).
    await endNow(gem);
    const late = await send(alice, gem, bob.wallet, '101');
    expect([late.status, late.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const bobs = await send(bob, gem, alice.wallet, '1');
    expect([bobs.status, bobs.body.type]).toEqual([409, '/problems/insufficient-balance']);

    const before = await lastEventId();
    const sweeps = await Promise.all([t.app.marketKeeper.sweep(), t.app.marketKeeper.sweep()]);
    expect(sweeps.reduce((n, s) => n + s.itemsExpired, 0)).toBe(3);
    expect([await balance(gem, alice.wallet), await balance(gem, bob.wallet)]).toEqual(['100', '0']);
    expect((await read(`/assets/${gem}`)).totalSupply).toBe('100');
    expect(await lotsOf(gem, alice.wallet)).toEqual([]);
    const events = (await read(`/api/v1/events?after=${before}&limit=100`)).data.filter(
      (e: { data: { assetId?: string } }) => e.data.assetId === gem,
    );
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'newTransfer',
      'itemExpired',
      'newTransfer',
      'itemExpired',
      'newTransfer',
      'itemExpired',
    ]);
    const burned = events
      .filter((e: { type: string }) => e.type === 'itemExpired')
      .map((e: { data: { holder: string; amount: string; to: string; outcome: string } }) => [
        e.data.holder,
        e.data.amount,
        e.data.to,
        e.data.outcome,
      ])
      .sort();
    expect(burned).toEqual(
      [
        [alice.wallet, '15', ZERO, 'burned'],
        [bob.wallet, '10', ZERO, 'burned'],
        [bob.wallet, '5', ZERO, 'burned'],
      ].sort(),
    );
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i].operationId).toBe(events[i + 1].operationId);
      expect(events[i].data).toMatchObject({ id: events[i + 1].data.transferId, to: ZERO });
    }
    // The sweep burned each once: a later one finds nothing; Alice's permanent units move.
    expect(await t.app.marketKeeper.sweep()).toMatchObject({ itemsExpired: 0 });
    expect((await send(alice, gem, bob.wallet, '100')).status).toBe(201);
  });

  it('a store purchase pays with the timed units first; a burn takes them first; a store grant makes a lot', async () => {
    const gem = await currency();
    const prize = await currency();
    const ends = inAnHour();
    await mint(gem, alice.wallet, '50');
    await mint(gem, alice.wallet, '30', ends);
    const offer = await call(studio, 'POST', '/api/v1/collections/season/store-offers', {
      name: 'Season chest',
      price: [{ assetId: gem, amount: '20' }],
      grants: [{ assetId: prize, amount: '7', expiresInSeconds: 3600 }],
      payTo: studio.wallet,
    });
    expect(offer.status, offer.text).toBe(201);
    expect(offer.body.grants).toEqual([{ assetId: prize, amount: '7', expiresInSeconds: 3600 }]);
    const bought = await call(alice, 'POST', `/api/v1/store-offers/${offer.body.id}/purchase`, {
      wallet: alice.wallet,
      version: 1,
    });
    expect(bought.status, bought.text).toBe(201);
    // The price came from the lot, and went to the studio with its end time.
    expect(await lotsOf(gem, alice.wallet)).toEqual([['10', ends]]);
    expect(await lotsOf(gem, studio.wallet)).toEqual([['20', ends]]);
    const [[granted, grantEnds]] = await lotsOf(prize, alice.wallet);
    expect(granted).toBe('7');
    const delay = new Date(grantEnds).getTime() - new Date(bought.body.purchase.createdAt).getTime();
    expect(delay).toBe(3_600_000);
    // A burn of 15: the 10 timed units, then 5 permanent ones.
    const burn = await call(alice, 'POST', `/api/v1/assets/${gem}/burn`, {
      from: alice.wallet,
      amount: '15',
    });
    expect(burn.status, burn.text).toBe(201);
    expect(await lotsOf(gem, alice.wallet)).toEqual([]);
    expect(await balance(gem, alice.wallet)).toBe('45');
    expect(await checkInvariants(orm())).toEqual([]);
  });

  it('timed units are never escrowed: an offer counts only the permanent free units', async () => {
    const gem = await currency();
    await mint(gem, bob.wallet, '5');
    await mint(gem, bob.wallet, '40', inAnHour());
    const settings = await call(studio, 'PUT', '/api/v1/collections/season/market/settings', {
      royaltyBps: 0,
      currencies: [gem],
    });
    expect(settings.status, settings.text).toBe(200);
    const made = await call(studio, 'POST', '/api/v1/collections/season/mint/batch', {
      items: [{ to: alice.wallet, nft: { name: 'Banner', metadata } }],
    });
    expect(made.status, made.text).toBe(201);
    const nft = made.body.nfts[0].id;
    const offer = (price: string) =>
      call(bob, 'POST', '/api/v1/offers', { wallet: bob.wallet, assetId: nft, currency: gem, price });
    const refused = await offer('6');
    expect([refused.status, refused.body.type]).toEqual([409, '/problems/insufficient-balance']);
    const placed = await offer('5');
    expect(placed.status, placed.text).toBe(201);
    // The timed units still pay anything else.
    expect((await send(bob, gem, alice.wallet, '40')).status).toBe(201);
    expect(await lotsOf(gem, alice.wallet)).toHaveLength(1);
  });

  if (kind === 'postgres') {
    it('two instances on one database sweeping together burn each lot once', async () => {
      const second = await startTestApp(kind, QUIET, { databaseUrl: t.app.config.databaseUrl });
      try {
        const gem = await currency();
        for (let i = 0; i < 12; i++)
          await mint(gem, i % 2 ? alice.wallet : bob.wallet, String(i + 1), inAnHour(i + 1));
        await endNow(gem);
        const sweeps = await Promise.all([
          t.app.marketKeeper.sweep(),
          second.app.marketKeeper.sweep(),
          t.app.marketKeeper.sweep(),
          second.app.marketKeeper.sweep(),
        ]);
        expect(sweeps.reduce((n, s) => n + s.itemsExpired, 0)).toBe(12);
        const burned = await orm().em.fork().find(OutboxEvent, { type: 'itemExpired', assetId: gem });
        expect(
          burned.map((e) => Number((e.data as { amount: string }).amount)).sort((a, b) => a - b),
        ).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
        expect((await read(`/assets/${gem}`)).totalSupply).toBe('0');
      } finally {
        await second.close();
      }
    });
  }

  it('the end time is checked: in the future, an RFC 3339 instant', async () => {
    const gem = await currency();
    for (const expiresAt of [new Date(Date.now() - 1000).toISOString(), 'tomorrow']) {
      const refused = await call(studio, 'POST', `/api/v1/currencies/${gem}/mint`, {
        to: alice.wallet,
        amount: '1',
        expiresAt,
      });
      expect([refused.status, refused.body.type]).toEqual([400, '/problems/validation-failed']);
    }
    expect(await orm().em.fork().count(OutboxEvent, { assetId: gem, type: 'newTransfer' })).toBe(0);
  });

  it('a grant resent with its key after its end time passed replays its answer', async () => {
    const gem = await currency();
    const expiresAt = new Date(Date.now() + 2000).toISOString();
    const body = { to: alice.wallet, amount: '3', expiresAt };
    const first = await call(studio, 'POST', `/api/v1/currencies/${gem}/mint`, body, 'timed-grant-resent');
    expect(first.status, first.text).toBe(201);
    // Time must pass (nothing to poll): the end time is 2 s ahead.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(expiresAt) - Date.now() + 10)));
    const again = await call(studio, 'POST', `/api/v1/currencies/${gem}/mint`, body, 'timed-grant-resent');
    expect([again.status, again.headers.get('idempotent-replayed'), again.body]).toEqual([
      201,
      'true',
      first.body,
    ]);
    // A new key is a new request: refused for its end time.
    const late = await call(studio, 'POST', `/api/v1/currencies/${gem}/mint`, body, 'timed-grant-late');
    expect([late.status, late.body.type]).toEqual([400, '/problems/validation-failed']);
    expect((await read(`/assets/${gem}`)).totalSupply).toBe('3');
  });
});

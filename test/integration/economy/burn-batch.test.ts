// Issue 21: burns and atomic batch transfers through the real app over HTTP, on both databases; every
// response is checked against the contract by the test client, and the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const ZERO = '0x0000000000000000000000000000000000000000';
const STRANGER = '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB';
const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };

describe.each(DB_KINDS)('burns and batch transfers on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;

  const call = (user: HttpUser, method: string, path: string, body?: unknown, key?: string) =>
    t.http(method, path, { body, headers: { ...user.headers, ...(key ? { 'idempotency-key': key } : {}) } });
  const gold = async (wallet: string) => {
    const owners = await t.http('GET', '/assets/gold/owners', {
      headers: { ...alice.headers, 'cache-control': 'no-cache' },
    });
    expect(owners.status).toBe(200);
    return owners.body.data.find((o: { wallet: string }) => o.wallet === wallet)?.balance ?? '0';
  };
  const asset = async (id: string) => {
    const got = await t.http('GET', `/assets/${id}`, {
      headers: { ...alice.headers, 'cache-control': 'no-cache' },
    });
    expect(got.status, got.text).toBe(200);
    return got.body;
  };
  const newNft = async (user: HttpUser, name: string) => {
    const nft = await call(user, 'POST', '/api/v1/nft/create', { name, metadata });
    expect(nft.status, nft.text).toBe(201);
    return nft.body.id as string;
  };
  const events = async (user: HttpUser, after: string) => {
    const page = await t.http('GET', `/api/v1/events?after=${after}&limit=100`, { headers: user.headers });
    expect(page.status, page.text).toBe(200);
    return page.body.data as {
      id: string;
      type: string;
      operationId?: string;
      data: Record<string, string>;
    }[];
  };
  const lastEventId = async (user: HttpUser) => {
    let after = '0';
    for (;;) {
      const page = await events(user, after);
      if (page.length === 0) return after;
      after = page[page.length - 1].id;
    }
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'econ', name: 'Economy' })).status).toBe(
      201,
    );
    const created = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gold',
      name: 'Gold',
      symbol: 'GOLD',
      decimals: 2,
      maxSupply: '1000000',
      collection: 'econ',
      metadata,
    });
    expect(created.status, created.text).toBe(201);
    for (const user of [alice, bob]) {
      const minted = await call(studio, 'POST', '/api/v1/currencies/gold/mint', {
        to: user.wallet,
        amount: '100',
      });
      expect(minted.status, minted.text).toBe(201);
    }
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
      await t.close();
    }
  });

  it('burns currency: balance and supply go down, a transfer to the zero address, once per key', async () => {
    const before = await lastEventId(alice);
    const burn = await call(
      alice,
      'POST',
      '/api/v1/assets/gold/burn',
      { from: alice.wallet, amount: '2.5' },
      'b1',
    );
    expect(burn.status, burn.text).toBe(201);
    expect(burn.body).toMatchObject({ assetId: 'gold', from: alice.wallet, to: ZERO, amount: '2.5' });
    expect(burn.headers.get('location')).toBe(`/api/v1/transfers/${burn.body.id}`);
    const again = await call(
      alice,
      'POST',
      '/api/v1/assets/gold/burn',
      { from: alice.wallet, amount: '2.5' },
      'b1',
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(burn.body.id);
    expect(await gold(alice.wallet)).toBe('97.5');
    expect((await asset('gold')).totalSupply).toBe('197.5');
    const seen = await events(alice, before);
    expect(seen.map((e) => [e.type, e.data.id, e.data.to])).toEqual([['newTransfer', burn.body.id, ZERO]]);
    expect(seen[0]).not.toHaveProperty('operationId'); // a single write is no multi-part operation
    const reused = await call(
      alice,
      'POST',
      '/api/v1/assets/gold/burn',
      { from: alice.wallet, amount: '3' },
      'b1',
    );
    expect(reused.status).toBe(422);
    expect(reused.body.type).toBe('/problems/idempotency-key-reused');
  });

  it('refuses a burn that does not fit, changing nothing', async () => {
    const cases: [unknown, string, number, string][] = [
      [{ from: alice.wallet, amount: '1000' }, 'gold', 409, '/problems/insufficient-balance'],
      [{ from: alice.wallet, amount: '0.001' }, 'gold', 400, '/problems/invalid-amount'],
      [{ from: alice.wallet, amount: '0' }, 'gold', 400, '/problems/invalid-amount'],
      [{ from: bob.wallet, amount: '1' }, 'gold', 403, '/problems/wallet-not-controlled'],
      [{ from: alice.wallet, amount: '1' }, 'silver', 404, '/problems/not-found'],
      [{ from: alice.wallet }, 'gold', 400, '/problems/validation-failed'],
    ];
    for (const [body, id, status, type] of cases) {
      const refused = await call(alice, 'POST', `/api/v1/assets/${id}/burn`, body);
      expect(refused.status, refused.text).toBe(status);
      expect(refused.body.type).toBe(type);
    }
    expect(await gold(alice.wallet)).toBe('97.5');
    expect((await asset('gold')).totalSupply).toBe('197.5');
  });

  it('burns an NFT: readable as burned, held by no one, never moves again', async () => {
    const sword = await newNft(alice, 'Rusty Sword');
    expect((await asset(sword)).burned).toBe(false);
    const half = await call(alice, 'POST', `/api/v1/assets/${sword}/burn`, {
      from: alice.wallet,
      amount: '2',
    });
    expect(half.status).toBe(400);
    expect(half.body.type).toBe('/problems/invalid-amount');
    const burn = await call(alice, 'POST', `/api/v1/assets/${sword}/burn`, {
      from: alice.wallet,
      amount: '1',
    });
    expect(burn.status, burn.text).toBe(201);
    const burned = await asset(sword);
    expect(burned).toMatchObject({ id: sword, burned: true, owner: null });
    const owners = await t.http('GET', `/assets/${sword}/owners`, {
      headers: { ...alice.headers, 'cache-control': 'no-cache' },
    });
    expect(owners.body.data).toEqual([]);
    const move = await call(alice, 'POST', '/api/v1/transfer', {
      assetId: sword,
      from: alice.wallet,
      to: bob.wallet,
      amount: '1',
    });
    expect(move.status).toBe(409);
    expect(move.body.type).toBe('/problems/insufficient-balance');
    const twice = await call(alice, 'POST', `/api/v1/assets/${sword}/burn`, {
      from: alice.wallet,
      amount: '1',
    });
    expect(twice.status).toBe(409);
    const listed = await t.http('GET', `/wallets/${alice.wallet}/assets`, {
      headers: { ...alice.headers, 'cache-control': 'no-cache' },
    });
    expect(listed.body.data.map((h: { asset: { id: string } }) => h.asset.id)).not.toContain(sword);
  });

  it('applies a batch atomically: every leg, its events consecutive, once per key', async () => {
    const shield = await newNft(alice, 'Shield');
    const before = await lastEventId(alice);
    const legs = [
      { assetId: 'gold', from: alice.wallet, to: bob.wallet, amount: '10' },
      { assetId: shield, from: alice.wallet, to: bob.wallet, amount: '1' },
      { assetId: 'gold', from: alice.wallet, to: STRANGER, amount: '7.5' },
    ];
    const batch = await call(alice, 'POST', '/api/v1/transfer/batch', { legs }, 'batch-1');
    expect(batch.status, batch.text).toBe(201);
    expect(batch.body.id).toMatch(/^op_/);
    expect(
      batch.body.transfers.map((tr: { assetId: string; to: string; amount: string }) => [
        tr.assetId,
        tr.to,
        tr.amount,
      ]),
    ).toEqual(legs.map((leg) => [leg.assetId, leg.to, leg.amount]));
    const replay = await call(alice, 'POST', '/api/v1/transfer/batch', { legs }, 'batch-1');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(batch.body);
    expect(await gold(alice.wallet)).toBe('80');
    expect(await gold(bob.wallet)).toBe('110');
    expect(await gold(STRANGER)).toBe('7.5');
    expect((await asset(shield)).owner).toBe(bob.wallet);
    const seen = await events(alice, before);
    expect(seen.map((e) => e.data.id)).toEqual(batch.body.transfers.map((tr: { id: string }) => tr.id));
    // Every leg's event names the batch (the answer's id); a single transfer's names none.
    expect(seen.map((e) => e.operationId)).toEqual(seen.map(() => batch.body.id));
    for (const tr of batch.body.transfers) {
      const got = await call(alice, 'GET', `/api/v1/transfers/${tr.id}`);
      expect(got.body).toEqual(tr);
    }
  });

  it('rejects the whole batch when one leg fails, naming the leg, changing nothing', async () => {
    const ring = await newNft(alice, 'Ring');
    const ok = { assetId: 'gold', from: alice.wallet, to: bob.wallet, amount: '1' };
    const cases: [unknown[], number, string, string][] = [
      // Together the legs take more than alice holds (80), though each alone fits.
      [
        [ok, { ...ok, amount: '50' }, { ...ok, amount: '40' }],
        409,
        '/problems/insufficient-balance',
        'Leg 2: ',
      ],
      [
        [ok, { ...ok, assetId: ring, from: bob.wallet, to: alice.wallet }],
        403,
        '/problems/wallet-not-controlled',
        'Leg 1: ',
      ],
      [[ok, ok, { ...ok, assetId: 'silver' }], 404, '/problems/not-found', 'Leg 2: '],
      [[ok, { ...ok, assetId: ring, amount: '2' }], 400, '/problems/invalid-amount', 'Leg 1: '],
      [[{ ...ok, to: alice.wallet }, ok], 400, '/problems/validation-failed', 'Leg 0: '],
      [[ok, { ...ok, to: ZERO }], 400, '/problems/validation-failed', 'Leg 1: '],
      // The same NFT twice: the second leg takes what the first already moved.
      [
        [
          { ...ok, assetId: ring, amount: '1' },
          { ...ok, assetId: ring, amount: '1', to: STRANGER },
        ],
        409,
        '/problems/insufficient-balance',
        'Leg 1: ',
      ],
      [[], 400, '/problems/validation-failed', ''],
      [Array.from({ length: 51 }, () => ok), 400, '/problems/validation-failed', ''],
    ];
    const before = await lastEventId(alice);
    for (const [legs, status, type, label] of cases) {
      const refused = await call(alice, 'POST', '/api/v1/transfer/batch', { legs });
      expect(refused.status, refused.text).toBe(status);
      expect(refused.body.type).toBe(type);
      if (label) expect(refused.body.detail).toMatch(new RegExp(`^${label}`));
    }
    const pointer = await call(alice, 'POST', '/api/v1/transfer/batch', {
      legs: [ok, { ...ok, amount: '0.001' }],
    });
    expect(pointer.body.errors).toEqual([expect.objectContaining({ pointer: '/body/legs/1/amount' })]);
    expect(await gold(alice.wallet)).toBe('80');
    expect((await asset(ring)).owner).toBe(alice.wallet);
    expect(await events(alice, before)).toEqual([]);
  });
});

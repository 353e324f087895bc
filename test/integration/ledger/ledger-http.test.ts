// The ledger through the real app over HTTP, with real tokens and API keys; every response is checked
// against the contract by the test client.
import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import fc from 'fast-check';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = {
  image: 'https://cdn.example.com/sword.png',
  attributes: [{ trait_type: 'damage', value: 87 }],
  creator: 'Example Studio',
};
const STRANGER = '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB';

describe.each(DB_KINDS)('ledger over HTTP on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let player: HttpUser;
  let oracle: HttpUser;

  const call = (
    user: HttpUser,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => t.http(method, path, { body, headers: { ...user.headers, ...headers } });

  beforeAll(async () => {
    t = await startTestApp(kind, {
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
      LOGIN_RATE_LIMIT_REQUESTS: '1000',
    });
    [studio, player, oracle] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'player'),
      httpUser(t, 'oracle'),
    ]);
    expect(
      (await call(studio, 'POST', '/api/v1/collections', { id: 'dawn-quest', name: 'Dawn Quest' })).status,
    ).toBe(201);
    const gold = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gold',
      name: 'Gold',
      symbol: 'GOLD',
      decimals: 2,
      maxSupply: '1000000',
      collection: 'dawn-quest',
      metadata: { ...metadata, attributes: [] },
    });
    expect(gold.status, gold.text).toBe(201);
    expect(gold.headers.get('location')).toBe('/assets/gold');
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
      await t.close();
    }
  });

  it('mints an NFT and gold, transfers both, and reads wallets, owners and transfers', async () => {
    const nft = await call(
      player,
      'POST',
      '/api/v1/nft/create',
      { name: 'Sword of Dawn', metadata },
      { 'idempotency-key': 'nft-1' },
    );
    expect(nft.status, nft.text).toBe(201);
    expect(nft.body.owner).toBe(player.wallet);
    expect(nft.headers.get('location')).toBe(`/assets/${nft.body.id}`);
    const replay = await call(
      player,
      'POST',
      '/api/v1/nft/create',
      { name: 'Sword of Dawn', metadata },
      { 'idempotency-key': 'nft-1' },
    );
    expect(replay.body).toEqual(nft.body);

    const mint = await call(studio, 'POST', '/api/v1/currencies/gold/mint', {
      to: player.wallet.toLowerCase(),
      amount: '500.25',
    });
    expect(mint.status, mint.text).toBe(201);
    expect(mint.body).toMatchObject({
      from: '0x0000000000000000000000000000000000000000',
      to: player.wallet,
      amount: '500.25',
    });

    const gold = await call(
      player,
      'POST',
      '/api/v1/transfer',
      {
        assetId: 'gold',
        from: player.wallet,
        to: STRANGER.toUpperCase().replace('0X', '0x'),
        amount: '12.5',
      },
      { 'idempotency-key': 't-1' },
    );
    expect(gold.status, gold.text).toBe(201);
    expect(gold.body).toMatchObject({ to: STRANGER, status: 'completed' });
    expect(gold.headers.get('location')).toBe(`/api/v1/transfers/${gold.body.id}`);
    const sword = await call(player, 'POST', '/api/v1/transfer', {
      assetId: nft.body.id,
      from: player.wallet,
      to: STRANGER,
      amount: '1',
    });
    expect(sword.status, sword.text).toBe(201);

    expect((await call(player, 'GET', `/assets/${nft.body.id}`)).body.owner).toBe(STRANGER);
    const wallet = await call(player, 'GET', `/wallets/${STRANGER.toLowerCase()}/assets`);
    expect(wallet.body.wallet).toBe(STRANGER);
    expect(
      wallet.body.data.map((h: { asset: { id: string }; balance: string }) => [h.asset.id, h.balance]),
    ).toEqual(
      [
        ['gold', '12.5'],
        [nft.body.id, '1'],
      ].sort((a, b) => (a[0] < b[0] ? -1 : 1)),
    );
    expect((await call(player, 'GET', `/wallets/${STRANGER}/assets?kind=nft`)).body.data).toHaveLength(1);
    expect((await call(player, 'GET', '/assets/gold/owners')).body.data).toEqual(
      [
        { wallet: player.wallet, balance: '487.75' },
        { wallet: STRANGER, balance: '12.5' },
      ].sort((a, b) => (a.wallet.toLowerCase() < b.wallet.toLowerCase() ? -1 : 1)),
    );
    expect((await call(player, 'GET', '/api/v1/assets')).body.data).toEqual([
      {
        wallet: player.wallet,
        asset: expect.objectContaining({ id: 'gold', totalSupply: '500.25' }),
        balance: '487.75',
      },
    ]);
    const history = await call(player, 'GET', `/api/v1/transfers?wallet=${STRANGER}`);
    expect(history.body.data.map((transfer: { id: string }) => transfer.id)).toEqual([
      sword.body.id,
      gold.body.id,
    ]);
    expect((await call(player, 'GET', `/api/v1/transfers/${gold.body.id}`)).body).toEqual(gold.body);
  });

  it("ends an NFT's history with its mint, which writes no transfer row (issue 37)", async () => {
    const nft = await call(player, 'POST', '/api/v1/nft/create', { name: 'Shield of Dusk', metadata });
    expect(nft.status, nft.text).toBe(201);
    const id: string = nft.body.id;
    const mint = {
      id: `tr_${id.slice('nft_'.length)}`,
      assetId: id,
      from: '0x0000000000000000000000000000000000000000',
      to: player.wallet,
      amount: '1',
      status: 'completed',
      createdAt: nft.body.createdAt,
      completedAt: nft.body.createdAt,
      failureReason: null,
    };
    const history = (query: string) => call(player, 'GET', `/api/v1/transfers?assetId=${id}${query}`);
    expect((await history('')).body).toEqual({ data: [mint], next_cursor: null });
    expect(await t.app.orm.em.fork().count(Transfer, { asset: id })).toBe(0);
    expect((await call(player, 'GET', `/api/v1/transfers/${mint.id}`)).body).toEqual(mint);

    // It moves on twice, then is burned: the mint stays the first entry, to the wallet it was minted to.
    const away = await call(player, 'POST', '/api/v1/transfer', {
      assetId: id,
      from: player.wallet,
      to: studio.wallet,
      amount: '1',
    });
    expect(away.status, away.text).toBe(201);
    const back = await call(studio, 'POST', '/api/v1/transfer', {
      assetId: id,
      from: studio.wallet,
      to: player.wallet,
      amount: '1',
    });
    expect(back.status, back.text).toBe(201);
    const burn = await call(player, 'POST', `/api/v1/assets/${id}/burn`, {
      from: player.wallet,
      amount: '1',
    });
    expect(burn.status, burn.text).toBe(201);
    const all = await history('');
    expect(all.body.data.map((entry: { id: string }) => entry.id)).toEqual([
      burn.body.id,
      back.body.id,
      away.body.id,
      mint.id,
    ]);
    expect(all.body.data[3]).toEqual(mint);

    // Paged: the mint is the last page's last entry, also when the transfers fill a page exactly.
    for (const limit of [1, 2, 3]) {
      const ids: string[] = [];
      let cursor = '';
      for (let pages = 0; pages < 5; pages++) {
        const page = await history(`&limit=${limit}${cursor}`);
        expect(page.status, page.text).toBe(200);
        ids.push(...page.body.data.map((entry: { id: string }) => entry.id));
        if (page.body.next_cursor === null) break;
        cursor = `&cursor=${page.body.next_cursor}`;
      }
      expect(ids, `limit ${limit}`).toEqual([burn.body.id, back.body.id, away.body.id, mint.id]);
    }

    // With a wallet: only the wallet it was minted to sees the mint, in its own history too (below).
    const byWallet = async (wallet: string, asset = `&assetId=${id}`) =>
      (await call(player, 'GET', `/api/v1/transfers?wallet=${wallet}${asset}`)).body.data.map(
        (entry: { id: string }) => entry.id,
      );
    expect(await byWallet(player.wallet)).toEqual([burn.body.id, back.body.id, away.body.id, mint.id]);
    expect(await byWallet(studio.wallet)).toEqual([back.body.id, away.body.id]);
    expect(await byWallet(player.wallet, '')).toContain(mint.id);
    expect(await byWallet(studio.wallet, '')).not.toContain(mint.id);

    // A currency's mint is its own transfer row; no other id answers as a mint.
    const gold = await call(player, 'GET', '/api/v1/transfers?assetId=gold');
    expect(gold.body.data.length).toBe(await t.app.orm.em.fork().count(Transfer, { asset: 'gold' }));
    const unknown = await call(player, 'GET', `/api/v1/transfers/tr_${'0'.repeat(26)}`);
    expect([unknown.status, unknown.body.type]).toEqual([404, '/problems/not-found']);
  });

  it('lists the NFTs minted to a wallet in its own history, in order, across pages (issue 37)', async () => {
    const mintId = (nftId: string) => `tr_${nftId.slice('nft_'.length)}`;
    const ids = (body: { data: { id: string }[] }) => body.data.map((entry) => entry.id);
    const first = await call(player, 'POST', '/api/v1/nft/create', { name: 'Lantern', metadata });
    expect(first.status, first.text).toBe(201);
    const gold = await call(studio, 'POST', '/api/v1/currencies/gold/mint', {
      to: player.wallet,
      amount: '1',
    });
    expect(gold.status, gold.text).toBe(201);
    const second = await call(player, 'POST', '/api/v1/nft/create', { name: 'Compass', metadata });
    expect(second.status, second.text).toBe(201);
    const away = await call(player, 'POST', '/api/v1/transfer', {
      assetId: first.body.id,
      from: player.wallet,
      to: studio.wallet,
      amount: '1',
    });
    expect(away.status, away.text).toBe(201);
    const theirs = await call(studio, 'POST', '/api/v1/nft/create', { name: 'Banner', metadata });
    expect(theirs.status, theirs.text).toBe(201);

    // Newest first: each mint where it happened among the wallet's transfers, as getTransfer answers it.
    const history = async (wallet: string, query = '') => {
      const response = await call(player, 'GET', `/api/v1/transfers?wallet=${wallet}${query}`);
      expect(response.status, response.text).toBe(200);
      return response.body;
    };
    /** Every entry of a wallet's history, page after page. */
    const walk = async (wallet: string, limit: number) => {
      const entries: string[] = [];
      let cursor = '';
      for (let pages = 0; pages < 1000; pages++) {
        const page = await history(wallet, `&limit=${limit}${cursor}`);
        entries.push(...ids(page));
        if (page.next_cursor === null) return entries;
        cursor = `&cursor=${page.next_cursor}`;
      }
      throw new Error('endless history');
    };
    const top = await history(player.wallet, '&limit=4');
    expect(ids(top)).toEqual([away.body.id, mintId(second.body.id), gold.body.id, mintId(first.body.id)]);
    const secondMint = top.data[1];
    expect(secondMint).toEqual({
      id: mintId(second.body.id),
      assetId: second.body.id,
      from: '0x0000000000000000000000000000000000000000',
      to: player.wallet,
      amount: '1',
      status: 'completed',
      createdAt: second.body.createdAt,
      completedAt: second.body.createdAt,
      failureReason: null,
    });
    expect((await call(player, 'GET', `/api/v1/transfers/${secondMint.id}`)).body).toEqual(secondMint);
    // Every NFT ever minted to the wallet is in it once; another wallet's mints never are.
    const nfts = await t.app.orm.em
      .fork()
      .find(Asset, { kind: 'nft', mintedTo: player.wallet.toLowerCase() }, { fields: ['id'] });
    const all = await walk(player.wallet, 100);
    expect(nfts.length).toBeGreaterThanOrEqual(3);
    for (const nft of nfts) expect(all).toContain(mintId(nft.id));
    expect(all).not.toContain(mintId(theirs.body.id));
    expect(new Set(all).size).toBe(all.length);
    const studios = await walk(studio.wallet, 100);
    expect(studios).toContain(mintId(theirs.body.id));
    expect(studios).not.toContain(mintId(second.body.id));

    // Paged with the same cursor: the pages put together are the whole history, each entry once.
    for (const limit of [1, 2, 3]) expect(await walk(player.wallet, limit), `limit ${limit}`).toEqual(all);
  });

  it('pages with limit and cursor', async () => {
    const first = await call(player, 'GET', '/api/v1/transfers?limit=1');
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toHaveLength(1);
    const second = await call(player, 'GET', `/api/v1/transfers?limit=1&cursor=${first.body.next_cursor}`);
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
    const foreign = await call(player, 'GET', `/api/v1/collections?cursor=${first.body.next_cursor}`);
    expect([foreign.status, foreign.body.type]).toEqual([400, '/problems/validation-failed']);
  });

  it('answers each rejection with its problem', async () => {
    const bad = '0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
    const checksum = await call(player, 'GET', `/wallets/${bad}/assets`);
    expect(checksum.status).toBe(400);
    expect(checksum.body).toMatchObject({
      type: '/problems/invalid-address-checksum',
      errors: [{ pointer: '/path/wallet_id' }],
    });
    const empty = await call(player, 'GET', '/wallets/0x0000000000000000000000000000000000000001/assets');
    expect(empty.body).toEqual({
      wallet: '0x0000000000000000000000000000000000000001',
      data: [],
      next_cursor: null,
    });

    const cases: [HttpUser, string, string, unknown, number, string][] = [
      [
        player,
        'POST',
        '/api/v1/transfer',
        { assetId: 'gold', from: STRANGER, to: player.wallet, amount: '1' },
        403,
        '/problems/wallet-not-controlled',
      ],
      [
        player,
        'POST',
        '/api/v1/transfer',
        { assetId: 'gold', from: player.wallet, to: STRANGER, amount: '100000' },
        409,
        '/problems/insufficient-balance',
      ],
      [
        player,
        'POST',
        '/api/v1/transfer',
        { assetId: 'gold', from: player.wallet, to: STRANGER, amount: '0.001' },
        400,
        '/problems/invalid-amount',
      ],
      [
        player,
        'POST',
        '/api/v1/transfer',
        { assetId: 'gold', from: bad, to: STRANGER, amount: '1' },
        400,
        '/problems/invalid-address-checksum',
      ],
      [
        player,
        'POST',
        '/api/v1/transfer',
        { assetId: 'silver', from: player.wallet, to: STRANGER, amount: '1' },
        404,
        '/problems/not-found',
      ],
      [
        player,
        'POST',
        '/api/v1/nft/create',
        { name: 'X', metadata, collection: 'dawn-quest', to: STRANGER },
        403,
        '/problems/wallet-not-controlled',
      ],
      [
        player,
        'POST',
        '/api/v1/nft/create',
        { name: 'X', metadata: { ...metadata, image: 'ftp://x' }, collection: 'dawn-quest' },
        400,
        '/problems/validation-failed',
      ],
      [
        player,
        'POST',
        '/api/v1/currencies',
        { id: 'gems', name: 'Gems', symbol: 'GEM', decimals: 0, collection: 'dawn-quest', metadata },
        403,
        '/problems/forbidden',
      ],
      [
        player,
        'POST',
        '/api/v1/currencies/gold/mint',
        { to: player.wallet, amount: '1' },
        403,
        '/problems/forbidden',
      ],
      [
        studio,
        'POST',
        '/api/v1/currencies/gold/mint',
        { to: player.wallet, amount: '999999999' },
        409,
        '/problems/max-supply-exceeded',
      ],
      [
        studio,
        'POST',
        '/api/v1/collections',
        { id: 'dawn-quest', name: 'Again' },
        409,
        '/problems/collection-exists',
      ],
      [
        player,
        'POST',
        '/api/v1/price/gold',
        { price: '1', currency: 'USD', source: 'me' },
        403,
        '/problems/forbidden',
      ],
      [player, 'GET', '/api/v1/price/gold?currency=EUR', undefined, 404, '/problems/price-not-found'],
      [player, 'GET', '/api/v1/collections?cursor=bm9wZQ', undefined, 400, '/problems/validation-failed'],
    ];
    for (const [user, method, path, body, status, type] of cases) {
      const response = await call(user, method, path, body);
      // Role refusals come from the edge, which names its own problem type; the status is pinned.
      const actualType = status === 403 && type === '/problems/forbidden' ? type : response.body?.type;
      expect([response.status, actualType], `${method} ${path} ${JSON.stringify(body)}`).toEqual([
        status,
        type,
      ]);
    }
    const first = await call(
      player,
      'POST',
      '/api/v1/transfer',
      { assetId: 'gold', from: player.wallet, to: STRANGER, amount: '1' },
      { 'idempotency-key': 'reuse' },
    );
    expect(first.status).toBe(201);
    const reused = await call(
      player,
      'POST',
      '/api/v1/transfer',
      { assetId: 'gold', from: player.wallet, to: STRANGER, amount: '2' },
      { 'idempotency-key': 'reuse' },
    );
    expect([reused.status, reused.body.type]).toEqual([422, '/problems/idempotency-key-reused']);
  });

  it('links an external wallet with SIWE and lets the caller spend from it', async () => {
    const account = privateKeyToAccount('0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba');
    const challenge = await call(player, 'POST', '/api/v1/wallets/link/challenge', {
      address: account.address.toLowerCase(),
    });
    expect(challenge.status, challenge.text).toBe(201);
    expect(challenge.body.message).toContain(`${new URL(t.baseUrl).host} wants you to sign in`);
    const signature = await account.signMessage({ message: challenge.body.message });
    const linked = await call(player, 'POST', '/api/v1/wallets/link', {
      message: challenge.body.message,
      signature,
    });
    expect(linked.status, linked.text).toBe(201);
    expect(linked.body).toMatchObject({ address: account.address, kind: 'linked' });
    const again = await call(player, 'POST', '/api/v1/wallets/link', {
      message: challenge.body.message,
      signature,
    });
    expect(again.body.type).toBe('/problems/invalid-siwe-nonce');
    expect(
      (await call(player, 'GET', '/api/v1/wallets')).body.data.map((w: { kind: string }) => w.kind),
    ).toEqual(['custodial', 'linked']);

    await call(studio, 'POST', '/api/v1/currencies/gold/mint', { to: account.address, amount: '5' });
    const spend = await call(player, 'POST', '/api/v1/transfer', {
      assetId: 'gold',
      from: account.address,
      to: STRANGER,
      amount: '5',
    });
    expect(spend.status, spend.text).toBe(201);
  });

  it('records prices and answers the current price and OHLC candles', async () => {
    for (const [price, observedAt] of [
      ['0.0118', '2026-11-20T08:05:00.000Z'],
      ['0.0122', '2026-11-20T08:30:00.000Z'],
      ['0.0125', '2026-11-20T09:10:00.000Z'],
    ]) {
      const posted = await call(oracle, 'POST', '/api/v1/price/gold', {
        price,
        currency: 'USD',
        source: 'example-oracle',
        observedAt,
      });
      expect(posted.status, posted.text).toBe(201);
    }
    expect((await call(player, 'GET', '/api/v1/price/gold')).body).toEqual({
      assetId: 'gold',
      price: '0.0125',
      currency: 'USD',
      source: 'example-oracle',
      observedAt: '2026-11-20T09:10:00.000Z',
    });
    const candles = await call(
      player,
      'GET',
      '/api/v1/price/gold/history?interval=1h&from=2026-11-20T08:00:00.000Z&to=2026-11-20T10:00:00.000Z',
    );
    expect(candles.status, candles.text).toBe(200);
    expect(candles.body.candles).toEqual([
      {
        start: '2026-11-20T08:00:00.000Z',
        open: '0.0118',
        high: '0.0122',
        low: '0.0118',
        close: '0.0122',
        count: 2,
      },
      {
        start: '2026-11-20T09:00:00.000Z',
        open: '0.0125',
        high: '0.0125',
        low: '0.0125',
        close: '0.0125',
        count: 1,
      },
    ]);
    const tooLarge = await call(
      player,
      'GET',
      '/api/v1/price/gold/history?interval=1m&from=2026-11-01T00:00:00.000Z&to=2026-11-21T00:00:00.000Z',
    );
    expect([tooLarge.status, tooLarge.body.type]).toEqual([400, '/problems/range-too-large']);
  });

  it('lets exactly 10 of 100 simultaneous transfers spend a balance of 10', async () => {
    const spender = await httpUser(t);
    await call(studio, 'POST', '/api/v1/currencies', {
      id: 'gems',
      name: 'Gems',
      symbol: 'GEM',
      decimals: 0,
      collection: 'dawn-quest',
      metadata,
    });
    expect(
      (await call(studio, 'POST', '/api/v1/currencies/gems/mint', { to: spender.wallet, amount: '10' }))
        .status,
    ).toBe(201);
    // As a client does: each request has its Idempotency-Key and is resent with it after a 503 (no
    // connection free within the pool's time-out, or the request time limit reached on a loaded
    // machine: then the first try may still commit, and the resend answers what it did).
    const transfer = async (i: number) => {
      const key = `spend-${kind}-${i}-${randomUUID()}`;
      for (let attempt = 1; ; attempt++) {
        const answer = await call(
          spender,
          'POST',
          '/api/v1/transfer',
          { assetId: 'gems', from: spender.wallet, to: i % 2 ? STRANGER : studio.wallet, amount: '1' },
          { 'Idempotency-Key': key },
        );
        if (answer.status !== 503 || attempt === 10) return answer;
        await setTimeout(1000 * Number(answer.headers.get('retry-after') ?? 1));
      }
    };
    const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => transfer(i)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(90);
    expect((await call(spender, 'GET', `/wallets/${spender.wallet}/assets`)).body.data).toEqual([]);
  });

  it('keeps the invariants under random concurrent transfers and same-key retries (property)', async () => {
    const users = await Promise.all(Array.from({ length: 3 }, () => httpUser(t)));
    await call(studio, 'POST', '/api/v1/currencies', {
      id: 'ore',
      name: 'Ore',
      symbol: 'ORE',
      decimals: 1,
      collection: 'dawn-quest',
      metadata,
    });
    for (const user of users)
      await call(studio, 'POST', '/api/v1/currencies/ore/mint', { to: user.wallet, amount: '10' });
    const relics: string[] = [];
    for (const user of users)
      relics.push(
        (
          await call(user, 'POST', '/api/v1/nft/create', {
            name: 'Relic',
            metadata,
          })
        ).body.id,
      );
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            from: fc.nat({ max: 2 }),
            shift: fc.integer({ min: 1, max: 2 }),
            relic: fc.option(fc.nat({ max: 2 }), { freq: 3 }),
            tenths: fc.integer({ min: 1, max: 60 }),
            retry: fc.boolean(),
          }),
          { minLength: 5, maxLength: 25 },
        ),
        async (operations) => {
          round++;
          const orm = t.app.orm as unknown as Orm;
          const before = await orm.em.fork().count(Transfer, {});
          const responses = await Promise.all(
            operations.flatMap((op, i) => {
              const sender = users[op.from];
              const body = {
                assetId: op.relic === null ? 'ore' : relics[op.relic],
                from: sender.wallet,
                to: users[(op.from + op.shift) % 3].wallet,
                amount: op.relic === null ? (op.tenths / 10).toString() : '1',
              };
              const headers = { 'idempotency-key': `r${round}-${i}` };
              const send = () => call(sender, 'POST', '/api/v1/transfer', body, headers);
              return op.retry ? [send(), send()] : [send()];
            }),
          );
          for (const response of responses) expect([201, 409], response.text).toContain(response.status);
          // A retry answered 201 is the first answer replayed: one row per distinct transfer id.
          const applied = new Set(
            responses.filter((response) => response.status === 201).map((response) => response.body.id),
          );
          expect(await orm.em.fork().count(Transfer, {})).toBe(before + applied.size);
          expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
        },
      ),
      { numRuns: 6 },
    );
  });
});

// Cached reads (src/http/read-cache.ts) never show a state older than one a client was told is
// committed: after transfers, mints and new NFTs the listings change at once, on both databases; on
// SQLite even a write by another process shows at once; `Cache-Control: no-cache` reads the source.
// Invalidation is keyed: a transfer drops the cached listings of its two wallets, not another's.
// With two instances on PostgreSQL, a write through one reaches the other's cached reads through the
// relay (the documented, bounded delay), a wallet link included (it writes an internal change row).
import Database from 'better-sqlite3';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssetSupply } from '../../src/db/entities/AssetSupply.ts';
import { Holding as HoldingRow } from '../../src/db/entities/Holding.ts';
import type { Orm } from '../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { checkInvariants, type HttpUser, httpUser, PASSWORD } from '../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/coin.png', attributes: [], creator: 'Example Studio' };
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const TEST_ENV = {
  RATE_LIMIT_REQUESTS: '100000',
  RATE_LIMIT_USER_REQUESTS: '100000',
  LOGIN_RATE_LIMIT_REQUESTS: '1000',
};

interface Holding {
  asset: { id: string; name: string; totalSupply: string | null; owner: string | null };
  balance: string;
}

async function holdings(t: TestApp, user: HttpUser, wallet: string, headers: Record<string, string> = {}) {
  const response = await t.http<{ data: Holding[] }>('GET', `/wallets/${wallet}/assets`, {
    headers: { ...user.headers, ...headers },
  });
  expect(response.status, response.text).toBe(200);
  return new Map(response.body.data.map((holding) => [holding.asset.id, holding]));
}

async function setUp(t: TestApp, prefix: string) {
  const [studio, player] = await Promise.all([httpUser(t, 'studio'), httpUser(t, 'player')]);
  const call = (method: string, path: string, body?: unknown) =>
    t.http(method, path, { body, headers: studio.headers });
  expect((await call('POST', '/api/v1/collections', { id: `${prefix}-c`, name: 'Cache' })).status).toBe(201);
  const currency = await call('POST', '/api/v1/currencies', {
    id: `${prefix}-gold`,
    name: 'Gold',
    symbol: 'GOLD',
    decimals: 2,
    collection: `${prefix}-c`,
    metadata,
  });
  expect(currency.status, currency.text).toBe(201);
  const minted = await call('POST', `/api/v1/currencies/${prefix}-gold/mint`, {
    to: player.wallet,
    amount: '100',
  });
  expect(minted.status, minted.text).toBe(201);
  return { studio, player, gold: `${prefix}-gold` };
}

describe.each(DB_KINDS)('cached reads on %s', (kind) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp(kind, TEST_ENV);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
      await t.close();
    }
  });

  it('shows every committed change at once, and serves repeated reads from the cache', async () => {
    const { studio, player, gold } = await setUp(t, 'one');
    // The set-up's events reach the relay a moment later (and empty the cache, as any instance's
    // events do): once they have, a repeated read is served from the cache.
    let served = false;
    for (let attempt = 0; attempt < 50 && !served; attempt++) {
      expect((await holdings(t, player, player.wallet)).get(gold)?.balance).toBe('100');
      const hits = t.app.readCache.hits;
      expect((await holdings(t, player, player.wallet)).get(gold)?.balance).toBe('100');
      served = t.app.readCache.hits === hits + 1;
      if (!served) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(served).toBe(true);

    // A transfer: both wallets, at once.
    const sent = await t.http('POST', '/api/v1/transfer', {
      body: { assetId: gold, from: player.wallet, to: studio.wallet, amount: '12.5' },
      headers: player.headers,
    });
    expect(sent.status, sent.text).toBe(201);
    expect((await holdings(t, player, player.wallet)).get(gold)?.balance).toBe('87.5');
    expect((await holdings(t, player, studio.wallet)).get(gold)?.balance).toBe('12.5');

    // A mint elsewhere changes the total supply every holder's listing shows.
    const minted = await t.http('POST', `/api/v1/currencies/${gold}/mint`, {
      body: { to: studio.wallet, amount: '50' },
      headers: studio.headers,
    });
    expect(minted.status, minted.text).toBe(201);
    expect((await holdings(t, player, player.wallet)).get(gold)?.asset.totalSupply).toBe('150');

    // A new NFT appears in its owner's listing, and its transfer moves it.
    const nft = await t.http<{ id: string }>('POST', '/api/v1/nft/create', {
      body: { name: 'Sword', metadata },
      headers: player.headers,
    });
    expect(nft.status, nft.text).toBe(201);
    expect((await holdings(t, player, player.wallet)).has(nft.body.id)).toBe(true);
    const moved = await t.http('POST', '/api/v1/transfer', {
      body: { assetId: nft.body.id, from: player.wallet, to: studio.wallet, amount: '1' },
      headers: player.headers,
    });
    expect(moved.status, moved.text).toBe(201);
    expect((await holdings(t, player, player.wallet)).has(nft.body.id)).toBe(false);
    const asset = await t.http<{ owner: string }>('GET', `/assets/${nft.body.id}`, {
      headers: player.headers,
    });
    expect(asset.body.owner.toLowerCase()).toBe(studio.wallet.toLowerCase());
  });

  it('reads the source when asked, and (SQLite) sees writes made behind the API within a millisecond', async () => {
    const { player, gold } = await setUp(t, 'two');
    expect((await holdings(t, player, player.wallet)).get(gold)?.asset.totalSupply).toBe('100');
    // Behind the ledger store (no commit hook, no event): only a read of the source shows it. What
    // can change (a balance, a supply, an owner) is read every time; the fields an asset keeps are
    // read once (src/domain/ledger/reads/fixed-views.ts).
    const em = (t.app.orm as unknown as Orm).em.fork();
    await em.nativeUpdate(AssetSupply, { asset: gold }, { totalSupply: 12_345n });
    await em.nativeUpdate(
      HoldingRow,
      { wallet: player.wallet.toLowerCase(), asset: gold },
      { balance: 4_321n },
    );
    const fresh = await holdings(t, player, player.wallet, { 'cache-control': 'no-cache' });
    expect(fresh.get(gold)?.asset.totalSupply).toBe('123.45');
    expect(fresh.get(gold)?.balance).toBe('43.21');
    // Back as the ledger wrote them (the invariants are checked at the end).
    await em.nativeUpdate(AssetSupply, { asset: gold }, { totalSupply: 10_000n });
    await em.nativeUpdate(
      HoldingRow,
      { wallet: player.wallet.toLowerCase(), asset: gold },
      { balance: 10_000n },
    );
    if (kind === 'sqlite') {
      // A connection of its own on the same file, as another process's (an admin script, say).
      const other = new Database(t.app.config.sqlitePath as string);
      try {
        other.prepare('update asset set name = ? where id = ?').run('Gold again', gold);
      } finally {
        other.close();
      }
      // SQLite's change counter is read at most once a millisecond.
      await new Promise((resolve) => setTimeout(resolve, 2));
      expect((await holdings(t, player, player.wallet)).get(gold)?.asset.name).toBe('Gold again');
      // The asset's kept fixed fields went with it (a field no write of the service changes).
      const again = await holdings(t, player, player.wallet, { 'cache-control': 'no-cache' });
      expect(again.get(gold)?.asset.name).toBe('Gold again');
    }
  });

  it('lists each asset exactly as GET /assets/{id} shows it', async () => {
    const { studio, player, gold } = await setUp(t, 'view');
    const call = (path: string, body: unknown) => t.http('POST', path, { body, headers: studio.headers });
    const capped = await call('/api/v1/currencies', {
      id: 'view-gem',
      name: 'Gem',
      description: 'Scarce',
      symbol: 'GEM',
      decimals: 3,
      maxSupply: '1000.5',
      collection: 'view-c',
      metadata,
    });
    expect(capped.status, capped.text).toBe(201);
    const mintedGem = await call('/api/v1/currencies/view-gem/mint', { to: player.wallet, amount: '2.25' });
    expect(mintedGem.status, mintedGem.text).toBe(201);
    const nft = await t.http<{ id: string }>('POST', '/api/v1/nft/create', {
      body: { name: 'Shield', metadata },
      headers: player.headers,
    });
    expect(nft.status, nft.text).toBe(201);
    const asked: Record<string, string>[] = [{}, { 'cache-control': 'no-cache' }];
    for (const headers of asked) {
      const listed = await holdings(t, player, player.wallet, headers);
      expect([...listed.keys()].sort()).toEqual([gold, 'view-gem', nft.body.id].sort());
      for (const [id, holding] of listed) {
        const asset = await t.http('GET', `/assets/${id}`, { headers: { ...player.headers, ...headers } });
        expect(asset.status, asset.text).toBe(200);
        expect(holding.asset).toEqual(asset.body);
      }
    }
  });

  it("drops only the cached listings a change touched: another wallet's stays cached", async () => {
    const { studio, player, gold } = await setUp(t, 'keys');
    const bystander = await httpUser(t);
    const minted = await t.http('POST', `/api/v1/currencies/${gold}/mint`, {
      body: { to: bystander.wallet, amount: '7' },
      headers: studio.headers,
    });
    expect(minted.status, minted.text).toBe(201);
    expect((await holdings(t, bystander, bystander.wallet)).get(gold)?.balance).toBe('7');
    const sent = await t.http('POST', '/api/v1/transfer', {
      body: { assetId: gold, from: player.wallet, to: studio.wallet, amount: '1' },
      headers: player.headers,
    });
    expect(sent.status, sent.text).toBe(201);
    const hits = t.app.readCache.hits;
    expect((await holdings(t, bystander, bystander.wallet)).get(gold)?.balance).toBe('7');
    expect(t.app.readCache.hits).toBe(hits + 1); // the bystander's listing was not touched
    expect((await holdings(t, player, player.wallet)).get(gold)?.balance).toBe('99');
    expect(t.app.readCache.hits).toBe(hits + 1); // the sender's was
  });

  it('rejects bad input before the cache is consulted', async () => {
    const { player } = await setUp(t, 'three');
    const bad = await t.http('GET', `/wallets/${player.wallet}/assets?limit=0`, { headers: player.headers });
    expect(bad.status).toBe(400);
    const anonymous = await t.http('GET', `/wallets/${player.wallet}/assets`);
    expect(anonymous.status).toBe(401);
  });
});

describe.runIf(DB_KINDS.includes('postgres'))('cached reads across two instances on postgres', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startTestApp('postgres', { ...TEST_ENV, REDIS_URL });
    b = await startTestApp('postgres', { ...TEST_ENV, REDIS_URL }, { databaseUrl: a.app.config.databaseUrl });
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a transfer through one instance reaches the cached reads of the other through the relay', async () => {
    const { studio, player, gold } = await setUp(a, 'cluster');
    // Each instance in these tests is its own token issuer: B's reader signs in on B.
    const reader = await httpUser(b);
    // Instance B has the listing cached.
    const before = Date.now();
    for (;;) {
      if ((await holdings(b, reader, player.wallet)).get(gold)?.balance === '100') break;
      if (Date.now() - before > 5_000) throw new Error('instance B never saw the mint');
    }
    await holdings(b, reader, player.wallet);
    const sent = await a.http('POST', '/api/v1/transfer', {
      body: { assetId: gold, from: player.wallet, to: studio.wallet, amount: '40' },
      headers: player.headers,
    });
    expect(sent.status, sent.text).toBe(201);
    // B's cache follows within the relay delay.
    const sentAt = Date.now();
    let seen: string | undefined;
    while (Date.now() - sentAt < 5_000) {
      seen = (await holdings(b, reader, player.wallet)).get(gold)?.balance;
      if (seen === '60') break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(seen).toBe('60');
    // Asked to read the source, B answers from the database.
    const moreSent = await a.http('POST', '/api/v1/transfer', {
      body: { assetId: gold, from: player.wallet, to: studio.wallet, amount: '10' },
      headers: player.headers,
    });
    expect(moreSent.status, moreSent.text).toBe(201);
    const fresh = await holdings(b, reader, player.wallet, { 'cache-control': 'no-cache' });
    expect(fresh.get(gold)?.balance).toBe('50');
  });

  it("a wallet linked through one instance reaches the other's cached GET /api/v1/assets", async () => {
    const { studio, gold } = await setUp(a, 'link');
    const account = privateKeyToAccount('0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318');
    const minted = await a.http('POST', `/api/v1/currencies/${gold}/mint`, {
      body: { to: account.address, amount: '5' },
      headers: studio.headers,
    });
    expect(minted.status, minted.text).toBe(201);
    // The user signs in on each instance (each is its own token issuer here); one API key serves both.
    const onB = await httpUser(b);
    const login = await a.http<{ access_token: string }>('POST', '/api/v1/auth/login', {
      body: { username: onB.username, password: PASSWORD },
    });
    expect(login.status, login.text).toBe(200);
    const onA = { authorization: `Bearer ${login.body.access_token}`, 'x-api-key': onB.headers['x-api-key'] };
    const myAssets = async () => {
      const response = await b.http<{ data: { asset: { id: string } }[] }>('GET', '/api/v1/assets', {
        headers: onB.headers,
      });
      expect(response.status, response.text).toBe(200);
      return response.body.data.map((holding) => holding.asset.id);
    };
    expect(await myAssets()).toEqual([]);
    const hits = b.app.readCache.hits;
    expect(await myAssets()).toEqual([]);
    expect(b.app.readCache.hits).toBe(hits + 1); // B has it cached

    const challenge = await a.http<{ message: string }>('POST', '/api/v1/wallets/link/challenge', {
      body: { address: account.address.toLowerCase() },
      headers: onA,
    });
    expect(challenge.status, challenge.text).toBe(201);
    const linked = await a.http('POST', '/api/v1/wallets/link', {
      body: {
        message: challenge.body.message,
        signature: await account.signMessage({ message: challenge.body.message }),
      },
      headers: onA,
    });
    expect(linked.status, linked.text).toBe(201);
    // B's cache follows within the relay delay.
    const linkedAt = Date.now();
    let seen: string[] = [];
    while (Date.now() - linkedAt < 3_000) {
      seen = await myAssets();
      if (seen.includes(gold)) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(seen).toEqual([gold]);
  });
});

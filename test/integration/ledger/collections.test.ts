// Collections have owners (issue 13.6): only the owner (or an admin) adds NFTs or currencies to a
// collection; anyone else mints into a personal collection created on first use (issue 16.1's bare
// body). Through the real HTTP API, every response checked against the contract.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const METADATA = { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' };
const CURRENCY = { name: 'Silver', symbol: 'SLV', decimals: 2, metadata: METADATA };

describe.each(DB_KINDS)('collection ownership on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let rival: HttpUser;
  let player: HttpUser;
  let admin: HttpUser;

  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000' });
    [studio, rival, player, admin] = [
      await httpUser(t, 'studio'),
      await httpUser(t, 'studio'),
      await httpUser(t),
      await httpUser(t, 'admin'),
    ];
    const created = await t.http('POST', '/api/v1/collections', {
      body: { id: 'dawn-quest', name: 'Dawn Quest' },
      headers: studio.headers,
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  const assetCount = async (user: HttpUser) =>
    (await t.http('GET', '/api/v1/assets?limit=100', { headers: user.headers })).body.data.length;

  it("13.6: a player cannot mint an NFT into a studio's collection (403, nothing minted)", async () => {
    const before = await assetCount(player);
    const response = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Counterfeit', metadata: METADATA, collection: 'dawn-quest' },
      headers: player.headers,
    });
    expect([response.status, response.body.type]).toEqual([403, '/problems/forbidden']);
    expect(await assetCount(player)).toBe(before);
  });

  it("13.6: a studio cannot mint NFTs or create currencies in another studio's collection", async () => {
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Poached', metadata: METADATA, collection: 'dawn-quest' },
      headers: rival.headers,
    });
    expect([nft.status, nft.body.type]).toEqual([403, '/problems/forbidden']);
    const currency = await t.http('POST', '/api/v1/currencies', {
      body: { ...CURRENCY, id: 'rival-silver', collection: 'dawn-quest' },
      headers: rival.headers,
    });
    expect([currency.status, currency.body.type]).toEqual([403, '/problems/forbidden']);
    const asset = await t.http('GET', '/assets/rival-silver', { headers: rival.headers });
    expect(asset.status).toBe(404);
  });

  it('13.6: the owner and an admin mint into the collection', async () => {
    for (const user of [studio, admin]) {
      const nft = await t.http('POST', '/api/v1/nft/create', {
        body: { name: 'Sword of Dawn', metadata: METADATA, collection: 'dawn-quest' },
        headers: user.headers,
      });
      expect(nft.status).toBe(201);
      expect(nft.body.collection).toBe('dawn-quest');
    }
    const currency = await t.http('POST', '/api/v1/currencies', {
      body: { ...CURRENCY, id: 'silver', collection: 'dawn-quest' },
      headers: studio.headers,
    });
    expect(currency.status).toBe(201);
  });

  it("13.6: a player's bare mint goes into its own personal collection, created once and owned by it", async () => {
    const bodies = [
      { name: 'Potion', description: 'Heals.', metadata: METADATA },
      { name: 'Potion', metadata: METADATA },
    ];
    // Two first mints at once: the personal collection is created once and both succeed.
    const minted = await Promise.all(
      bodies.map((body) => t.http('POST', '/api/v1/nft/create', { body, headers: player.headers })),
    );
    expect(minted.map((r) => r.status)).toEqual([201, 201]);
    const personal = minted[0].body.collection as string;
    expect(personal).toBe(`user-${player.userId.slice('usr_'.length).toLowerCase()}`);
    expect(minted[1].body.collection).toBe(personal);
    expect(minted[0].body.owner).toBe(player.wallet);

    const collections = await t.http('GET', '/api/v1/collections?limit=100', { headers: player.headers });
    const mine = collections.body.data.filter((c: { id: string }) => c.id === personal);
    expect(mine).toHaveLength(1);
    expect(mine[0].owner).toBe(player.userId);

    // It is the player's own: naming it works, and nobody else may mint into it.
    const named = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Elixir', metadata: METADATA, collection: personal },
      headers: player.headers,
    });
    expect(named.status).toBe(201);
    const intruder = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Elixir', metadata: METADATA, collection: personal },
      headers: studio.headers,
    });
    expect([intruder.status, intruder.body.type]).toEqual([403, '/problems/forbidden']);
  });

  it('13.6: nobody can create a collection with a personal id (squatting a user-… id is a 400)', async () => {
    const squat = await t.http('POST', '/api/v1/collections', {
      body: { id: `user-${player.userId.slice('usr_'.length).toLowerCase()}x`, name: 'Squat' },
      headers: studio.headers,
    });
    expect([squat.status, squat.body.type]).toEqual([400, '/problems/validation-failed']);
    expect(squat.body.errors[0].pointer).toBe('/body/id');
  });
});

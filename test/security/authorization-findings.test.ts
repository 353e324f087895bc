// Issue 30, findings 2, 5 and 9, through the real HTTP API on both databases: powers over a
// collection follow the studio role (never ownership alone), a collection's burn policy holds for
// crafts, and the last-admin guard counts people only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { type HttpUser, httpServiceAccount, httpUser } from '../helpers/ledger-fixtures.ts';

const METADATA = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };

describe.each(DB_KINDS)('issue 30 authorization findings on %s', (kind) => {
  let t: TestApp;
  let admin: HttpUser;
  let seq = 0;

  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000', RATE_LIMIT_ACCOUNT_REQUESTS: '1000' });
    admin = await httpUser(t, 'admin');
  });
  afterAll(async () => {
    await t?.close();
  });

  const write = (user: HttpUser) => ({ ...user.headers, 'idempotency-key': `k-${++seq}` });

  async function collection(studio: HttpUser, body: Record<string, unknown>): Promise<string> {
    const id = `c${++seq}-${kind}`;
    const response = await t.http('POST', '/api/v1/collections', {
      body: { id, name: id, ...body },
      headers: studio.headers,
    });
    expect(response.status, response.text).toBe(201);
    return id;
  }

  async function mint(studio: HttpUser, collectionId: string, to: string, name = 'Item'): Promise<string> {
    const response = await t.http('POST', `/api/v1/collections/${collectionId}/mint/batch`, {
      body: { items: [{ to, nft: { name, metadata: METADATA } }] },
      headers: write(studio),
    });
    expect(response.status, response.text).toBe(201);
    return response.body.nfts[0].id;
  }

  async function asset(id: string) {
    return (await t.http('GET', `/assets/${id}`, { headers: admin.headers })).body;
  }

  const freeze = (user: HttpUser, id: string, action: 'freeze' | 'unfreeze' = 'freeze') =>
    t.http('POST', `/api/v1/assets/${id}/${action}`, { headers: user.headers });

  describe('30.2: powers over a collection follow the studio role, never ownership', () => {
    it('a player cannot freeze (or rename) an item of its personal collection it sold', async () => {
      const seller = await httpUser(t);
      const buyer = await httpUser(t);
      const nft = await t.http('POST', '/api/v1/nft/create', {
        body: { name: 'Sold Sword', metadata: METADATA },
        headers: write(seller),
      });
      expect(nft.status, nft.text).toBe(201);
      const sold = await t.http('POST', '/api/v1/transfer', {
        body: { assetId: nft.body.id, from: seller.wallet, to: buyer.wallet, amount: '1' },
        headers: write(seller),
      });
      expect(sold.status, sold.text).toBe(201);

      const frozen = await freeze(seller, nft.body.id);
      expect(frozen.status, frozen.text).toBe(403);
      const renamed = await t.http('PATCH', `/api/v1/assets/${nft.body.id}/metadata`, {
        body: { name: 'Worthless junk' },
        headers: write(seller),
      });
      expect(renamed.status, renamed.text).toBe(403);
      expect(await asset(nft.body.id)).toMatchObject({ frozen: false, name: 'Sold Sword' });
      // The buyer still moves it.
      const resold = await t.http('POST', '/api/v1/transfer', {
        body: { assetId: nft.body.id, from: buyer.wallet, to: seller.wallet, amount: '1' },
        headers: write(buyer),
      });
      expect(resold.status, resold.text).toBe(201);
    });

    it("neither a player nor the collection's studio undoes an admin's freeze; the admin does", async () => {
      const studio = await httpUser(t, 'studio');
      const player = await httpUser(t);
      const id = await collection(studio, {});
      const nft = await mint(studio, id, player.wallet);
      expect((await freeze(admin, nft)).status).toBe(200);

      const byStudio = await freeze(studio, nft, 'unfreeze');
      expect([byStudio.status, byStudio.body.type]).toEqual([403, '/problems/forbidden']);
      expect((await freeze(player, nft, 'unfreeze')).status).toBe(403);
      expect((await asset(nft)).frozen).toBe(true);
      expect((await freeze(admin, nft, 'unfreeze')).body.frozen).toBe(false);

      // A freeze by the studio is the studio's to undo.
      expect((await freeze(studio, nft)).body.frozen).toBe(true);
      expect((await freeze(studio, nft, 'unfreeze')).body.frozen).toBe(false);
    });

    it('a studio demoted to player, and its service account, lose every power at once', async () => {
      const studio = await httpUser(t, 'studio');
      const machine = await httpServiceAccount(t, studio, 'studio');
      const player = await httpUser(t);
      const id = await collection(studio, { burnPolicy: 'holder_or_studio', metadataPolicy: { name: true } });
      const nft = await mint(studio, id, player.wallet);
      const demoted = await t.http('PUT', `/api/v1/users/${studio.userId}/role`, {
        body: { role: 'player' },
        headers: admin.headers,
      });
      expect(demoted.status, demoted.text).toBe(200);

      for (const caller of [studio, machine]) {
        expect((await freeze(caller, nft)).status).toBe(403);
        const renamed = await t.http('PATCH', `/api/v1/assets/${nft}/metadata`, {
          body: { name: 'Worthless junk' },
          headers: write(caller),
        });
        expect(renamed.status, renamed.text).toBe(403);
        const burned = await t.http('POST', `/api/v1/assets/${nft}/burn`, {
          body: { from: player.wallet, amount: '1' },
          headers: write(caller),
        });
        expect(burned.status, burned.text).toBe(403);
        const minted = await t.http('POST', '/api/v1/nft/create', {
          body: { name: 'After demotion', metadata: METADATA, collection: id },
          headers: write(caller),
        });
        expect(minted.status, minted.text).toBe(403);
      }
      expect(await asset(nft)).toMatchObject({ frozen: false, burned: false, owner: player.wallet });
    });

    it('the asset answers who froze it (frozenBy): the studio or an admin while frozen, null once unfrozen', async () => {
      const studio = await httpUser(t, 'studio');
      const player = await httpUser(t);
      const id = await collection(studio, {});
      const nft = await mint(studio, id, player.wallet);
      expect(await asset(nft)).toMatchObject({ frozen: false, frozenBy: null });

      const frozen = await freeze(studio, nft);
      expect(frozen.body).toMatchObject({ frozen: true, frozenBy: studio.userId });
      expect(await asset(nft)).toMatchObject({ frozen: true, frozenBy: studio.userId });
      const listed = await t.http('GET', `/wallets/${player.wallet}/assets`, { headers: player.headers });
      expect(listed.body.data[0].asset).toMatchObject({ id: nft, frozen: true, frozenBy: studio.userId });

      expect((await freeze(studio, nft, 'unfreeze')).body).toMatchObject({ frozen: false, frozenBy: null });
      expect((await freeze(admin, nft)).body).toMatchObject({ frozen: true, frozenBy: admin.userId });
      // The studio sees why it may not undo this one.
      expect((await freeze(studio, nft, 'unfreeze')).status).toBe(403);
      expect(await asset(nft)).toMatchObject({ frozen: true, frozenBy: admin.userId });
    });

    it("a demoted studio's recipe no longer mints: a player's craft of it is 403 and burns nothing", async () => {
      const studio = await httpUser(t, 'studio');
      const player = await httpUser(t);
      const id = await collection(studio, {});
      const ore = `ore${++seq}${kind.charAt(0)}`;
      const created = await t.http('POST', '/api/v1/currencies', {
        body: { id: ore, name: 'Ore', symbol: 'ORE', decimals: 0, collection: id, metadata: METADATA },
        headers: studio.headers,
      });
      expect(created.status, created.text).toBe(201);
      const minted = await t.http('POST', `/api/v1/currencies/${ore}/mint`, {
        body: { to: player.wallet, amount: '10' },
        headers: write(studio),
      });
      expect(minted.status, minted.text).toBe(201);
      const recipe = await t.http('POST', `/api/v1/collections/${id}/recipes`, {
        body: {
          name: 'Smelt',
          inputs: [{ assetId: ore, amount: '1' }],
          outputs: [{ nft: { name: 'Ingot', metadata: METADATA } }, { assetId: ore, amount: '5' }],
        },
        headers: studio.headers,
      });
      expect(recipe.status, recipe.text).toBe(201);
      const craft = () =>
        t.http('POST', `/api/v1/recipes/${recipe.body.id}/craft`, {
          body: { wallet: player.wallet },
          headers: write(player),
        });
      const before = await craft();
      expect(before.status, before.text).toBe(201);
      const supply = (await asset(ore)).totalSupply;

      const demoted = await t.http('PUT', `/api/v1/users/${studio.userId}/role`, {
        body: { role: 'player' },
        headers: admin.headers,
      });
      expect(demoted.status, demoted.text).toBe(200);
      const after = await craft();
      expect([after.status, after.body.type], after.text).toEqual([403, '/problems/forbidden']);
      expect(await asset(ore)).toMatchObject({ totalSupply: supply });
      const holdings = await t.http('GET', `/wallets/${player.wallet}/assets`, { headers: admin.headers });
      const held = (holdings.body.data as { asset: { id: string; kind: string }; balance: string }[]).map(
        (item) => [item.asset.kind === 'nft' ? 'nft' : item.asset.id, item.balance],
      );
      // 10 minted, 1 burned and 5 minted by the one craft before the demotion.
      expect(held.sort()).toEqual(
        [
          ['nft', '1'],
          [ore, '14'],
        ].sort(),
      );

      // Promoted again, its recipe mints again.
      await t.http('PUT', `/api/v1/users/${studio.userId}/role`, {
        body: { role: 'studio' },
        headers: admin.headers,
      });
      expect((await craft()).status).toBe(201);
    });
  });

  describe("30.5: a collection's burn policy holds for crafts", () => {
    it("another studio's recipe cannot consume an NFT of a burnPolicy none collection (409), as a direct burn cannot", async () => {
      const keeper = await httpUser(t, 'studio');
      const forger = await httpUser(t, 'studio');
      const player = await httpUser(t);
      const relics = await collection(keeper, { burnPolicy: 'none' });
      const relic = await mint(keeper, relics, player.wallet, 'Relic');
      const forge = await collection(forger, {});
      const recipe = await t.http('POST', `/api/v1/collections/${forge}/recipes`, {
        body: {
          name: 'Melt a relic',
          inputs: [{ nft: { collection: relics, name: 'Relic' } }],
          outputs: [{ nft: { name: 'Slag', metadata: METADATA } }],
        },
        headers: forger.headers,
      });
      expect(recipe.status, recipe.text).toBe(201);

      const direct = await t.http('POST', `/api/v1/assets/${relic}/burn`, {
        body: { from: player.wallet, amount: '1' },
        headers: write(player),
      });
      expect([direct.status, direct.body.type]).toEqual([409, '/problems/burn-not-allowed']);
      const craft = await t.http('POST', `/api/v1/recipes/${recipe.body.id}/craft`, {
        body: { wallet: player.wallet, nfts: [relic] },
        headers: write(player),
      });
      expect([craft.status, craft.body.type], craft.text).toEqual([409, '/problems/burn-not-allowed']);
      expect(craft.body.detail).toMatch(/^Input 0: /);
      expect(await asset(relic)).toMatchObject({ burned: false, owner: player.wallet });
    });
  });

  describe('30.9: the last-admin guard counts people, not service accounts', () => {
    it("the only human admin's admin service account cannot demote its owner (409 last-admin)", async () => {
      // A database of its own: this test needs the admin to be the only human admin.
      const own = await startTestApp(kind, { RATE_LIMIT_ACCOUNT_REQUESTS: '1000' });
      try {
        const onlyAdmin = await httpUser(own, 'admin');
        const machine = await httpServiceAccount(own, onlyAdmin, 'admin');
        const demote = await own.http('PUT', `/api/v1/users/${onlyAdmin.userId}/role`, {
          body: { role: 'player' },
          headers: machine.headers,
        });
        expect([demote.status, demote.body.type], demote.text).toEqual([409, '/problems/last-admin']);
        const me = await own.http('GET', '/api/v1/me', { headers: onlyAdmin.headers });
        expect(me.body.role).toBe('admin');
        // The service account itself may still be demoted: people are unaffected.
        const demoteMachine = await own.http('PUT', `/api/v1/users/${machine.userId}/role`, {
          body: { role: 'player' },
          headers: onlyAdmin.headers,
        });
        expect(demoteMachine.status, demoteMachine.text).toBe(200);
      } finally {
        await own.close();
      }
    });
  });
});

// Issue 21: crafting through the real app over HTTP, on both databases: recipes (created by the
// collection's studio, listed, read), crafts as one plan (inputs burned, outputs minted, one `op_`
// id, all or nothing), every refusal with nothing changed, replay, and two crafts racing for the same
// Herbs. Every response is checked against the contract by the test client; the ledger's invariants
// after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const ZERO = '0x0000000000000000000000000000000000000000';
const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
const potion = { nft: { name: 'Potion', metadata } };

describe.each(DB_KINDS)('crafting on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let rival: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let potionRecipe: string;
  let reforgeRecipe: string;

  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );

  const balance = async (asset: string, wallet: string) => {
    const owners = await read(`/assets/${asset}/owners`);
    return owners.data.find((o: { wallet: string }) => o.wallet === wallet)?.balance ?? '0';
  };
  const supply = async (asset: string) => (await read(`/assets/${asset}`)).totalSupply as string;

  const mint = async (asset: string, to: string, amount: string) => {
    const minted = await call(studio, 'POST', `/api/v1/currencies/${asset}/mint`, { to, amount });
    expect(minted.status, minted.text).toBe(201);
  };
  const sword = async (to: string, name = 'Rusty Sword') => {
    const made = await call(studio, 'POST', '/api/v1/collections/alchemy/mint/batch', {
      items: [{ to, nft: { name, metadata } }],
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts[0].id as string;
  };
  const currency = async (id: string, decimals: number, maxSupply: string) => {
    const created = await call(studio, 'POST', '/api/v1/currencies', {
      id,
      name: id,
      symbol: id.toUpperCase(),
      decimals,
      maxSupply,
      collection: 'alchemy',
      metadata,
    });
    expect(created.status, created.text).toBe(201);
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, rival, alice, bob] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
    ]);
    const made = await call(studio, 'POST', '/api/v1/collections', { id: 'alchemy', name: 'Alchemy' });
    expect(made.status, made.text).toBe(201);
    await currency('herb', 0, '1000');
    await currency('essence', 2, '10');
    await mint('herb', alice.wallet, '10');
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
      await t.close();
    }
  });

  it('creates, reads and lists recipes; only the collection studio may create one', async () => {
    const created = await call(studio, 'POST', '/api/v1/collections/alchemy/recipes', {
      name: 'Potion',
      inputs: [{ assetId: 'herb', amount: '2' }],
      outputs: [potion],
    });
    expect(created.status, created.text).toBe(201);
    potionRecipe = created.body.id;
    expect(created.headers.get('location')).toBe(`/api/v1/recipes/${potionRecipe}`);
    expect(created.body).toMatchObject({ collection: 'alchemy', createdBy: studio.userId });
    const reforge = await call(studio, 'POST', '/api/v1/collections/alchemy/recipes', {
      name: 'Reforge',
      inputs: [{ nft: { collection: 'alchemy', name: 'Rusty Sword' } }, { assetId: 'herb', amount: '1.0' }],
      outputs: [{ assetId: 'essence', amount: '1.50' }, { nft: { name: 'Fine Sword', metadata } }],
    });
    expect(reforge.status, reforge.text).toBe(201);
    reforgeRecipe = reforge.body.id;
    // Amounts are kept in their canonical form.
    expect(reforge.body.inputs[1]).toEqual({ assetId: 'herb', amount: '1' });
    expect(reforge.body.outputs[0]).toEqual({ assetId: 'essence', amount: '1.5' });
    expect(await read(`/api/v1/recipes/${potionRecipe}`)).toEqual(created.body);
    const first = await read('/api/v1/collections/alchemy/recipes?limit=1');
    expect(first.data.map((r: { id: string }) => r.id)).toEqual([potionRecipe]);
    const second = await read(`/api/v1/collections/alchemy/recipes?limit=1&cursor=${first.next_cursor}`);
    expect(second.data.map((r: { id: string }) => r.id)).toEqual([reforgeRecipe]);
    expect(second.next_cursor).toBeNull();
    expect((await call(alice, 'GET', '/api/v1/recipes/rcp_01JD3ZB2C4D6E8F0G2H4J6K8M0')).status).toBe(404);
    expect((await call(alice, 'GET', '/api/v1/collections/nowhere/recipes')).status).toBe(404);
  });

  it('refuses a bad recipe with a clear problem and creates nothing', async () => {
    const post = (user: HttpUser, body: unknown, collection = 'alchemy') =>
      call(user, 'POST', `/api/v1/collections/${collection}/recipes`, body);
    const good = { name: 'X', inputs: [{ assetId: 'herb', amount: '1' }], outputs: [potion] };
    const cases: [HttpUser, unknown, string, number, string][] = [
      [alice, good, 'alchemy', 403, '/problems/role-not-allowed'],
      [rival, good, 'alchemy', 403, '/problems/forbidden'],
      [studio, good, 'nowhere', 404, '/problems/not-found'],
      [
        studio,
        { ...good, inputs: [{ assetId: 'silver', amount: '1' }] },
        'alchemy',
        404,
        '/problems/not-found',
      ],
      [
        studio,
        { ...good, inputs: [{ nft: { collection: 'nowhere', name: 'X' } }] },
        'alchemy',
        404,
        '/problems/not-found',
      ],
      [
        studio,
        { ...good, inputs: [{ assetId: 'herb', amount: '1.5' }] },
        'alchemy',
        400,
        '/problems/invalid-amount',
      ],
      [
        studio,
        { ...good, inputs: [{ assetId: 'herb', amount: '0' }] },
        'alchemy',
        400,
        '/problems/invalid-amount',
      ],
      [
        studio,
        { ...good, outputs: [{ assetId: 'gold', amount: '1' }] },
        'alchemy',
        404,
        '/problems/not-found',
      ],
      [studio, { ...good, inputs: [] }, 'alchemy', 400, '/problems/validation-failed'],
      [
        studio,
        { ...good, outputs: Array.from({ length: 11 }, () => potion) },
        'alchemy',
        400,
        '/problems/validation-failed',
      ],
    ];
    for (const [user, body, collection, status, type] of cases) {
      const refused = await post(user, body, collection);
      expect([refused.status, refused.body.type], refused.text).toEqual([status, type]);
    }
    const nft = await sword(alice.wallet, 'Trinket');
    const notCurrency = await post(studio, { ...good, inputs: [{ assetId: nft, amount: '1' }] });
    expect([notCurrency.status, notCurrency.body.errors]).toEqual([
      400,
      [{ pointer: '/body/inputs/0/assetId', detail: 'must be a currency' }],
    ]);
    const list = await read('/api/v1/collections/alchemy/recipes');
    expect(list.data).toHaveLength(2);
  });

  it('crafts a Potion from two Herbs: one plan, one op id, consecutive events, replayed per key', async () => {
    const before = await lastEventId();
    const crafted = await call(
      alice,
      'POST',
      `/api/v1/recipes/${potionRecipe}/craft`,
      { wallet: alice.wallet },
      'c1',
    );
    expect(crafted.status, crafted.text).toBe(201);
    expect(crafted.body.id).toMatch(/^op_/);
    expect(crafted.body.recipe).toBe(potionRecipe);
    expect(crafted.body.burned).toMatchObject([
      { assetId: 'herb', from: alice.wallet, to: ZERO, amount: '2' },
    ]);
    expect(crafted.body.minted).toEqual([]);
    expect(crafted.body.nfts).toMatchObject([{ name: 'Potion', owner: alice.wallet, collection: 'alchemy' }]);
    expect(await balance('herb', alice.wallet)).toBe('8');
    expect(await supply('herb')).toBe('8');
    const potionId = crafted.body.nfts[0].id;
    expect((await read(`/assets/${potionId}`)).owner).toBe(alice.wallet);
    const events = (await read(`/api/v1/events?after=${before}&limit=100`)).data;
    expect(events.map((e: { type: string; data: { id: string } }) => [e.type, e.data.id])).toEqual([
      ['newTransfer', crafted.body.burned[0].id],
      ['newNFT', potionId],
    ]);
    expect(events.map((e: { operationId?: string }) => e.operationId)).toEqual([
      crafted.body.id,
      crafted.body.id,
    ]);
    const again = await call(
      alice,
      'POST',
      `/api/v1/recipes/${potionRecipe}/craft`,
      { wallet: alice.wallet },
      'c1',
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(crafted.body);
    expect(await balance('herb', alice.wallet)).toBe('8');
    const reused = await call(
      alice,
      'POST',
      `/api/v1/recipes/${potionRecipe}/craft`,
      { wallet: alice.wallet, nfts: [potionId] },
      'c1',
    );
    expect([reused.status, reused.body.type]).toEqual([422, '/problems/idempotency-key-reused']);
  });

  it('reforges a sword: an NFT input matched by template, a currency and an NFT minted', async () => {
    const rusty = await sword(alice.wallet);
    const crafted = await call(alice, 'POST', `/api/v1/recipes/${reforgeRecipe}/craft`, {
      wallet: alice.wallet,
      nfts: [rusty],
    });
    expect(crafted.status, crafted.text).toBe(201);
    expect(crafted.body.burned).toMatchObject([
      { assetId: rusty, to: ZERO, amount: '1' },
      { assetId: 'herb', to: ZERO, amount: '1' },
    ]);
    expect(crafted.body.minted).toMatchObject([
      { assetId: 'essence', from: ZERO, to: alice.wallet, amount: '1.5' },
    ]);
    expect(crafted.body.nfts).toMatchObject([{ name: 'Fine Sword', owner: alice.wallet }]);
    const burned = await read(`/assets/${rusty}`);
    expect([burned.owner, burned.burned]).toEqual([null, true]);
    expect(await supply('essence')).toBe('1.5');
    // The burned sword cannot be consumed again.
    const again = await call(alice, 'POST', `/api/v1/recipes/${reforgeRecipe}/craft`, {
      wallet: alice.wallet,
      nfts: [rusty],
    });
    expect([again.status, again.body.type]).toEqual([422, '/problems/recipe-input-mismatch']);
  });

  it('refuses every bad craft with a clear problem and changes nothing', async () => {
    const rusty = await sword(alice.wallet);
    const bobs = await sword(bob.wallet);
    const potionId = (
      await call(alice, 'POST', `/api/v1/recipes/${potionRecipe}/craft`, { wallet: alice.wallet })
    ).body.nfts[0].id;
    const herbs = await balance('herb', alice.wallet);
    const herbSupply = await supply('herb');
    const essence = await supply('essence');
    const craft = (user: HttpUser, recipe: string, body: unknown) =>
      call(user, 'POST', `/api/v1/recipes/${recipe}/craft`, body);
    const cases: [HttpUser, string, unknown, number, string, string?][] = [
      [bob, potionRecipe, { wallet: bob.wallet }, 409, '/problems/insufficient-balance', 'Input 0: '],
      [alice, potionRecipe, { wallet: bob.wallet }, 403, '/problems/wallet-not-controlled'],
      [alice, 'rcp_01JD3ZB2C4D6E8F0G2H4J6K8M0', { wallet: alice.wallet }, 404, '/problems/not-found'],
      [alice, reforgeRecipe, { wallet: alice.wallet }, 422, '/problems/recipe-input-mismatch', 'Input 0 '],
      [
        alice,
        reforgeRecipe,
        { wallet: alice.wallet, nfts: [potionId] },
        422,
        '/problems/recipe-input-mismatch',
      ],
      [
        alice,
        reforgeRecipe,
        { wallet: alice.wallet, nfts: [rusty, potionId] },
        422,
        '/problems/recipe-input-mismatch',
      ],
      [
        alice,
        reforgeRecipe,
        { wallet: alice.wallet, nfts: [bobs] },
        409,
        '/problems/insufficient-balance',
        'Input 0: ',
      ],
      [
        alice,
        reforgeRecipe,
        { wallet: alice.wallet, nfts: ['nft_01JD3ZB2C4D6E8F0G2H4J6K8M0'] },
        404,
        '/problems/not-found',
      ],
      [alice, potionRecipe, { wallet: alice.wallet, extra: 1 }, 400, '/problems/validation-failed'],
      [
        alice,
        potionRecipe,
        { wallet: alice.wallet, nfts: [rusty, rusty] },
        400,
        '/problems/validation-failed',
      ],
    ];
    for (const [user, recipe, body, status, type, detail] of cases) {
      const refused = await craft(user, recipe, body);
      expect([refused.status, refused.body.type], refused.text).toEqual([status, type]);
      if (detail) expect(refused.body.detail).toContain(detail);
    }
    expect(await balance('herb', alice.wallet)).toBe(herbs);
    expect(await supply('herb')).toBe(herbSupply);
    expect(await supply('essence')).toBe(essence);
    expect((await read(`/assets/${rusty}`)).owner).toBe(alice.wallet);
    expect((await read(`/assets/${bobs}`)).owner).toBe(bob.wallet);
  });

  it('refuses a craft whose output would pass the max supply, burning nothing', async () => {
    const greedy = await call(studio, 'POST', '/api/v1/collections/alchemy/recipes', {
      name: 'Greedy',
      inputs: [{ assetId: 'herb', amount: '1' }],
      outputs: [{ assetId: 'essence', amount: '9' }],
    });
    expect(greedy.status, greedy.text).toBe(201);
    const herbs = await balance('herb', alice.wallet);
    const refused = await call(alice, 'POST', `/api/v1/recipes/${greedy.body.id}/craft`, {
      wallet: alice.wallet,
    });
    expect([refused.status, refused.body.type], refused.text).toEqual([409, '/problems/max-supply-exceeded']);
    expect(refused.body.detail).toContain('Output 0: ');
    expect(await balance('herb', alice.wallet)).toBe(herbs);
    expect(await supply('essence')).toBe('1.5');
  });

  it('refuses a frozen input (409 asset-frozen, nothing burned); a soulbound NFT input may be consumed', async () => {
    const orm = t.app.orm as unknown as Orm;
    const setFlags = (id: string, flags: { frozen?: boolean; soulbound?: boolean }) =>
      orm.em.fork().nativeUpdate(Asset, { id }, flags);
    const herbs = await balance('herb', alice.wallet);
    await setFlags('herb', { frozen: true });
    const frozen = await call(alice, 'POST', `/api/v1/recipes/${potionRecipe}/craft`, {
      wallet: alice.wallet,
    });
    await setFlags('herb', { frozen: false });
    expect([frozen.status, frozen.body.type], frozen.text).toEqual([409, '/problems/asset-frozen']);
    expect(frozen.body.detail).toContain('Input 0: herb is frozen');
    expect(await balance('herb', alice.wallet)).toBe(herbs);
    const quest = await sword(alice.wallet);
    await setFlags(quest, { soulbound: true });
    const consumed = await call(alice, 'POST', `/api/v1/recipes/${reforgeRecipe}/craft`, {
      wallet: alice.wallet,
      nfts: [quest],
    });
    expect(consumed.status, consumed.text).toBe(201);
    expect((await read(`/assets/${quest}`)).burned).toBe(true);
  });

  it('two crafts racing for the same Herbs: exactly one wins', async () => {
    const racer = await httpUser(t);
    await mint('herb', racer.wallet, '2');
    const results = await Promise.all(
      [0, 1].map(() =>
        call(racer, 'POST', `/api/v1/recipes/${potionRecipe}/craft`, { wallet: racer.wallet }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(results.find((r) => r.status === 409)?.body.type).toBe('/problems/insufficient-balance');
    expect(await balance('herb', racer.wallet)).toBe('0');
    const owned = await read(`/wallets/${racer.wallet}/assets?kind=nft`);
    expect(owned.data).toHaveLength(1);
  });
});

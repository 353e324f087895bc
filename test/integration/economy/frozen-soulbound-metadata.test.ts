// Issue 21: soulbound and frozen items, burn policies and living metadata through the real app over
// HTTP (and WebSocket), on both databases; every response and message is checked against the contract
// by the test clients, and the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../../src/db/orm.ts';
import { applyFetchedMetadata } from '../../../src/domain/ledger/asset-updates.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { connect } from '../../helpers/ws.ts';

const STRANGER = '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB';
const metadata = (level = 1) => ({
  image: 'https://cdn.example.com/sword.png',
  attributes: [
    { trait_type: 'level', value: level },
    { trait_type: 'rarity', value: 'rare' },
  ],
  creator: 'Example Studio',
});

describe.each(DB_KINDS)('soulbound, frozen, burn policies and living metadata on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let admin: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;

  const call = (user: HttpUser, method: string, path: string, body?: unknown, key?: string) =>
    t.http(method, path, { body, headers: { ...user.headers, ...(key ? { 'idempotency-key': key } : {}) } });
  const fresh = (user: HttpUser, path: string) =>
    t.http('GET', path, { headers: { ...user.headers, 'cache-control': 'no-cache' } });
  const asset = async (id: string) => {
    const got = await fresh(alice, `/assets/${id}`);
    expect(got.status, got.text).toBe(200);
    return got.body;
  };
  const collection = async (body: Record<string, unknown>) => {
    const created = await call(studio, 'POST', '/api/v1/collections', body);
    expect(created.status, created.text).toBe(201);
    return created.body;
  };
  /** An NFT minted by the studio into `to`'s wallet through a batch mint. */
  const mintTo = async (collectionId: string, to: HttpUser, extra: Record<string, unknown> = {}) => {
    const minted = await call(studio, 'POST', `/api/v1/collections/${collectionId}/mint/batch`, {
      items: [{ to: to.wallet, nft: { name: 'Sword', metadata: metadata(), ...extra } }],
    });
    expect(minted.status, minted.text).toBe(201);
    return minted.body.nfts[0].id as string;
  };
  const transfer = (user: HttpUser, assetId: string, to: string, amount = '1') =>
    call(user, 'POST', '/api/v1/transfer', { assetId, from: user.wallet, to, amount });
  const burn = (user: HttpUser, assetId: string, from: string, amount = '1') =>
    call(user, 'POST', `/api/v1/assets/${assetId}/burn`, { from, amount });
  const expectProblem = (
    response: { status: number; body: { type: string }; text: string },
    status: number,
    type: string,
  ) => {
    expect(response.status, response.text).toBe(status);
    expect(response.body.type).toBe(type);
  };
  const events = async (after: string) => {
    const page = await t.http('GET', `/api/v1/events?after=${after}&limit=100`, { headers: alice.headers });
    expect(page.status, page.text).toBe(200);
    return page.body.data as { id: string; type: string; data: Record<string, unknown> }[];
  };
  const lastEventId = async () => {
    let after = '0';
    for (;;) {
      const page = await events(after);
      if (page.length === 0) return after;
      after = page[page.length - 1].id;
    }
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, admin, alice, bob] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'admin'),
      httpUser(t),
      httpUser(t),
    ]);
    await collection({ id: 'realm', name: 'Realm', mutableAttributes: ['level'], burnPolicy: 'holder' });
    const gold = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'realm-gold',
      name: 'Gold',
      symbol: 'GOLD',
      decimals: 0,
      collection: 'realm',
      metadata: metadata(),
    });
    expect(gold.status, gold.text).toBe(201);
    const minted = await call(studio, 'POST', '/api/v1/currencies/realm-gold/mint', {
      to: alice.wallet,
      amount: '1000',
    });
    expect(minted.status, minted.text).toBe(201);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
      await t.close();
    }
  });

  it('collections take and show their economy rules, with defaults', async () => {
    const plain = await collection({ id: 'plain', name: 'Plain' });
    expect(plain).toMatchObject({
      soulbound: false,
      burnPolicy: 'holder',
      mutableAttributes: [],
      metadataPolicy: { name: false, image: false, description: false },
    });
    const ruled = await collection({
      id: 'ruled',
      name: 'Ruled',
      soulbound: true,
      burnPolicy: 'none',
      mutableAttributes: ['level', 'xp'],
      metadataPolicy: { image: true },
    });
    expect(ruled).toMatchObject({
      soulbound: true,
      burnPolicy: 'none',
      mutableAttributes: ['level', 'xp'],
      metadataPolicy: { name: false, image: true, description: false },
    });
    const listed = await call(studio, 'GET', '/api/v1/collections?limit=100');
    expect(listed.body.data.find((c: { id: string }) => c.id === 'ruled')).toEqual(ruled);
    const bad = await call(studio, 'POST', '/api/v1/collections', {
      id: 'bad',
      name: 'Bad',
      burnPolicy: 'anyone',
    });
    expectProblem(bad, 400, '/problems/validation-failed');
  });

  it('a soulbound NFT never moves, alone or in a batch, and its holder may still burn it', async () => {
    const created = await call(alice, 'POST', '/api/v1/nft/create', {
      name: 'Badge',
      metadata: metadata(),
      soulbound: true,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ soulbound: true, frozen: false, metadataVersion: 0 });
    const badge = created.body.id as string;
    expect(await asset(badge)).toMatchObject({ soulbound: true });
    expectProblem(await transfer(alice, badge, bob.wallet), 409, '/problems/asset-soulbound');
    const batch = await call(alice, 'POST', '/api/v1/transfer/batch', {
      legs: [
        { assetId: 'realm-gold', from: alice.wallet, to: bob.wallet, amount: '1' },
        { assetId: badge, from: alice.wallet, to: bob.wallet, amount: '1' },
      ],
    });
    expectProblem(batch, 409, '/problems/asset-soulbound');
    expect(batch.body.detail).toMatch(/^Leg 1: /);
    expect((await asset(badge)).owner).toBe(alice.wallet);
    const burned = await burn(alice, badge, alice.wallet);
    expect(burned.status, burned.text).toBe(201);
    expect(await asset(badge)).toMatchObject({ burned: true, soulbound: true });
  });

  it('every NFT of a soulbound collection is soulbound (single and batch mints)', async () => {
    await collection({ id: 'trophies', name: 'Trophies', soulbound: true });
    const trophy = await mintTo('trophies', alice);
    expect(await asset(trophy)).toMatchObject({ soulbound: true });
    const single = await call(studio, 'POST', '/api/v1/nft/create', {
      name: 'Cup',
      metadata: metadata(),
      collection: 'trophies',
    });
    expect(single.status, single.text).toBe(201);
    expect(single.body.soulbound).toBe(true);
    expectProblem(await transfer(alice, trophy, bob.wallet), 409, '/problems/asset-soulbound');
    expectProblem(await transfer(studio, single.body.id, bob.wallet), 409, '/problems/asset-soulbound');
  });

  it('the studio freezes and unfreezes: frozen assets neither move nor burn; idempotent; others refused', async () => {
    const sword = await mintTo('realm', alice);
    const before = await lastEventId();
    // A player has no collection powers (issue 30): refused at the edge by its role.
    expectProblem(
      await call(alice, 'POST', `/api/v1/assets/${sword}/freeze`),
      403,
      '/problems/role-not-allowed',
    );
    expectProblem(
      await call(studio, 'POST', '/api/v1/assets/nft_01JD3Z6W8Q5N2M7K4R9T1V0XYZ/freeze'),
      404,
      '/problems/not-found',
    );
    const frozen = await call(studio, 'POST', `/api/v1/assets/${sword}/freeze`);
    expect(frozen.status, frozen.text).toBe(200);
    expect(frozen.body).toMatchObject({ id: sword, frozen: true, owner: alice.wallet });
    const again = await call(admin, 'POST', `/api/v1/assets/${sword}/freeze`);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(frozen.body);
    expect(await asset(sword)).toMatchObject({ frozen: true });
    expectProblem(await transfer(alice, sword, bob.wallet), 409, '/problems/asset-frozen');
    expectProblem(await burn(alice, sword, alice.wallet), 409, '/problems/asset-frozen');
    expect((await asset(sword)).owner).toBe(alice.wallet);
    // One event for the freeze, none for the repeat.
    const seen = await events(before);
    expect(seen.map((e) => [e.type, e.data.id, e.data.frozen])).toEqual([['assetUpdated', sword, true]]);
    const thawed = await call(studio, 'POST', `/api/v1/assets/${sword}/unfreeze`);
    expect(thawed.status, thawed.text).toBe(200);
    expect(thawed.body.frozen).toBe(false);
    const moved = await transfer(alice, sword, bob.wallet);
    expect(moved.status, moved.text).toBe(201);
    // A currency freezes too.
    expect((await call(studio, 'POST', '/api/v1/assets/realm-gold/freeze')).status).toBe(200);
    expectProblem(await transfer(alice, 'realm-gold', bob.wallet, '5'), 409, '/problems/asset-frozen');
    expect((await call(studio, 'POST', '/api/v1/assets/realm-gold/unfreeze')).status).toBe(200);
    expect((await transfer(alice, 'realm-gold', bob.wallet, '5')).status).toBe(201);
  });

  it('a freeze racing transfers: each transfer either commits or is refused as frozen, none after', async () => {
    const outcomes = await Promise.all([
      ...Array.from({ length: 8 }, () => transfer(alice, 'realm-gold', STRANGER, '1')),
      call(studio, 'POST', '/api/v1/assets/realm-gold/freeze'),
      ...Array.from({ length: 8 }, () => transfer(alice, 'realm-gold', STRANGER, '1')),
    ]);
    expect(outcomes[8].status).toBe(200);
    const moved = outcomes.filter((o, i) => i !== 8 && o.status === 201).length;
    for (const [i, o] of outcomes.entries())
      if (i !== 8 && o.status !== 201) expectProblem(o, 409, '/problems/asset-frozen');
    expectProblem(await transfer(alice, 'realm-gold', STRANGER, '1'), 409, '/problems/asset-frozen');
    const owners = await fresh(alice, '/assets/realm-gold/owners?limit=100');
    const stranger = owners.body.data.find((o: { wallet: string }) => o.wallet === STRANGER);
    expect(stranger?.balance ?? '0').toBe(String(moved));
    expect((await call(studio, 'POST', '/api/v1/assets/realm-gold/unfreeze')).status).toBe(200);
  });

  it('burn policies: holder only, holder or studio, none', async () => {
    await collection({ id: 'studio-burns', name: 'Studio burns', burnPolicy: 'holder_or_studio' });
    await collection({ id: 'no-burns', name: 'No burns', burnPolicy: 'none' });
    // holder (realm): the studio may not burn alice's item.
    const held = await mintTo('realm', alice);
    expectProblem(await burn(studio, held, alice.wallet), 403, '/problems/wallet-not-controlled');
    // holder_or_studio: the studio and an admin burn alice's items; bob still may not.
    const first = await mintTo('studio-burns', alice);
    const second = await mintTo('studio-burns', alice);
    expectProblem(await burn(bob, first, alice.wallet), 403, '/problems/wallet-not-controlled');
    const byStudio = await burn(studio, first, alice.wallet);
    expect(byStudio.status, byStudio.text).toBe(201);
    expect(byStudio.body).toMatchObject({ from: alice.wallet, assetId: first });
    expect((await burn(admin, second, alice.wallet)).status).toBe(201);
    const third = await mintTo('studio-burns', alice);
    expect((await burn(alice, third, alice.wallet)).status).toBe(201);
    // A studio burn still needs the item held by `from`.
    expectProblem(await burn(studio, first, alice.wallet), 409, '/problems/insufficient-balance');
    // none: nobody burns, the holder included.
    const kept = await mintTo('no-burns', alice);
    expectProblem(await burn(alice, kept, alice.wallet), 409, '/problems/burn-not-allowed');
    // The studio is no burner here: the wallet's control answers first, as for any refused burn.
    expectProblem(await burn(studio, kept, alice.wallet), 403, '/problems/wallet-not-controlled');
    expect(await asset(kept)).toMatchObject({ burned: false, owner: alice.wallet });
  });

  describe('living metadata', () => {
    let sword: string;
    const patch = (user: HttpUser, body: unknown, key?: string, id = sword) =>
      call(user, 'PATCH', `/api/v1/assets/${id}/metadata`, body, key);

    beforeAll(async () => {
      await collection({
        id: 'living',
        name: 'Living',
        mutableAttributes: ['level', 'xp'],
        metadataPolicy: { image: true },
      });
      sword = await mintTo('living', alice);
    });

    it('levels up the Sword: a new version, kept in the history, one event, not stale when cached', async () => {
      // Cache the read first: the update must not leave it stale.
      expect((await t.http('GET', `/assets/${sword}`, { headers: alice.headers })).body.metadataVersion).toBe(
        0,
      );
      const before = await lastEventId();
      const up = await patch(
        studio,
        { version: 0, attributes: [{ trait_type: 'level', value: 2 }] },
        'lvl-2',
      );
      expect(up.status, up.text).toBe(200);
      expect(up.body).toMatchObject({ id: sword, metadataVersion: 1, name: 'Sword' });
      expect(up.body.metadata.attributes).toEqual([
        { trait_type: 'level', value: 2 },
        { trait_type: 'rarity', value: 'rare' },
      ]);
      const cached = await t.http('GET', `/assets/${sword}`, { headers: alice.headers });
      expect(cached.body).toEqual(up.body);
      // Replayed with the same key: the same answer, no second version.
      const replay = await patch(
        studio,
        { version: 0, attributes: [{ trait_type: 'level', value: 2 }] },
        'lvl-2',
      );
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(up.body);
      const reused = await patch(studio, { attributes: [{ trait_type: 'level', value: 3 }] }, 'lvl-2');
      expectProblem(reused, 422, '/problems/idempotency-key-reused');
      const seen = await events(before);
      expect(seen.map((e) => [e.type, e.data.id, e.data.metadataVersion])).toEqual([
        ['assetUpdated', sword, 1],
      ]);
      const history = await call(bob, 'GET', `/api/v1/assets/${sword}/metadata/history`);
      expect(history.status, history.text).toBe(200);
      expect(history.body.data.map((v: { version: number }) => v.version)).toEqual([1, 0]);
      expect(history.body.data[0]).toMatchObject({ changedBy: studio.userId, name: 'Sword' });
      expect(history.body.data[1]).toMatchObject({ changedBy: studio.userId, metadata: metadata() });
      // An admin adds an attribute the collection declares (xp) and changes the image.
      const xp = await patch(admin, {
        attributes: [{ trait_type: 'xp', value: 40 }],
        image: 'ipfs://sword-glowing',
      });
      expect(xp.status, xp.text).toBe(200);
      expect(xp.body.metadataVersion).toBe(2);
      expect(xp.body.metadata).toMatchObject({ image: 'ipfs://sword-glowing' });
      expect(xp.body.metadata.attributes).toContainEqual({ trait_type: 'xp', value: 40 });
      const paged = await call(bob, 'GET', `/api/v1/assets/${sword}/metadata/history?limit=2`);
      expect(paged.body.data.map((v: { version: number }) => v.version)).toEqual([2, 1]);
      const rest = await call(
        bob,
        'GET',
        `/api/v1/assets/${sword}/metadata/history?limit=2&cursor=${paged.body.next_cursor}`,
      );
      expect(rest.body).toMatchObject({ next_cursor: null });
      expect(rest.body.data.map((v: { version: number }) => v.version)).toEqual([0]);
    });

    it('refuses what the collection does not declare, a stale version, strangers; changes nothing', async () => {
      const current = await asset(sword);
      const cases: [HttpUser, unknown, number, string][] = [
        [
          studio,
          { attributes: [{ trait_type: 'rarity', value: 'epic' }] },
          409,
          '/problems/metadata-not-mutable',
        ],
        [studio, { name: 'Excalibur' }, 409, '/problems/metadata-not-mutable'],
        [studio, { description: 'Shiny' }, 409, '/problems/metadata-not-mutable'],
        [
          studio,
          { version: 0, attributes: [{ trait_type: 'level', value: 9 }] },
          409,
          '/problems/version-mismatch',
        ],
        [alice, { attributes: [{ trait_type: 'level', value: 9 }] }, 403, '/problems/role-not-allowed'],
        [studio, {}, 400, '/problems/validation-failed'],
        [studio, { attributes: [{ trait_type: 'level' }] }, 400, '/problems/validation-failed'],
      ];
      for (const [user, body, status, type] of cases) expectProblem(await patch(user, body), status, type);
      const named = await patch(studio, {
        attributes: [
          { trait_type: 'level', value: 5 },
          { trait_type: 'rarity', value: 'epic' },
        ],
        name: 'Excalibur',
      });
      expect(named.body.errors).toEqual([
        {
          pointer: '/body/attributes/1/trait_type',
          detail: 'rarity is not a mutable attribute of the collection',
        },
        { pointer: '/body/name', detail: "the collection's metadataPolicy does not allow changing name" },
      ]);
      expectProblem(
        await patch(
          studio,
          { attributes: [{ trait_type: 'level', value: 2 }] },
          undefined,
          'nft_01JD3Z6W8Q5N2M7K4R9T1V0XYZ',
        ),
        404,
        '/problems/not-found',
      );
      expect(await asset(sword)).toEqual(current);
      // Setting what is already there changes nothing: no version, no event.
      const before = await lastEventId();
      const same = await patch(studio, { attributes: [{ trait_type: 'xp', value: 40 }] });
      expect(same.status).toBe(200);
      expect(same.body).toEqual(current);
      expect(await events(before)).toEqual([]);
    });

    it('two updates of one version: one applies, the other is told the version moved', async () => {
      const { metadataVersion } = await asset(sword);
      const [a, b] = await Promise.all([
        patch(studio, { version: metadataVersion, attributes: [{ trait_type: 'level', value: 10 }] }),
        patch(studio, { version: metadataVersion, attributes: [{ trait_type: 'level', value: 11 }] }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const loser = a.status === 409 ? a : b;
      expect(loser.body.type).toBe('/problems/version-mismatch');
      expect((await asset(sword)).metadataVersion).toBe(metadataVersion + 1);
      // Without `version`, concurrent updates all apply, one version each, gapless.
      const all = await Promise.all(
        [20, 21, 22].map((value) => patch(studio, { attributes: [{ trait_type: 'level', value }] })),
      );
      expect(all.map((r) => r.status)).toEqual([200, 200, 200]);
      const history = await call(bob, 'GET', `/api/v1/assets/${sword}/metadata/history?limit=100`);
      const versions = history.body.data.map((v: { version: number }) => v.version);
      expect(versions).toEqual(
        Array.from({ length: metadataVersion + 5 }, (_, i) => metadataVersion + 4 - i),
      );
    });

    it('late metadata (the chain fetcher): a new version by the service, with its event', async () => {
      const _orm = t.app.orm as unknown as Orm;
      const late = await mintTo('living', alice);
      const before = await lastEventId();
      const fetched = {
        name: 'Sword of Dusk',
        image: 'ipfs://bafy/dusk.png',
        attributes: [{ trait_type: 'level', value: 7 }],
        creator: 'chain',
      };
      expect(await applyFetchedMetadata(t.app.database, late, fetched)).toBe(true);
      expect(await applyFetchedMetadata(t.app.database, late, fetched)).toBe(false); // nothing changes
      expect(await applyFetchedMetadata(t.app.database, 'nft_01JD3Z6W8Q5N2M7K4R9T1V0XYZ', fetched)).toBe(
        false,
      );
      const updated = await asset(late);
      expect(updated).toMatchObject({ name: 'Sword of Dusk', metadataVersion: 1 });
      expect(updated.metadata).toEqual({
        image: 'ipfs://bafy/dusk.png',
        attributes: [{ trait_type: 'level', value: 7 }],
        creator: 'Example Studio',
      });
      const history = await call(bob, 'GET', `/api/v1/assets/${late}/metadata/history`);
      expect(
        history.body.data.map((v: { version: number; changedBy: string | null }) => [v.version, v.changedBy]),
      ).toEqual([
        [1, null],
        [0, studio.userId],
      ]);
      const seen = await events(before);
      expect(seen.map((e) => [e.type, e.data.id, e.data.name])).toEqual([
        ['assetUpdated', late, 'Sword of Dusk'],
      ]);
    });

    it('a subscriber receives assetUpdated on /ws (by wallet) and /assets/subscribe', async () => {
      const url = t.baseUrl.replace(/^http/, 'ws');
      const ws = await connect(`${url}/ws`, alice.headers);
      const legacy = await connect(`${url}/assets/subscribe`, alice.headers);
      try {
        ws.send({ type: 'subscribe', requestId: 'r1', walletId: alice.wallet, events: ['assetUpdated'] });
        await ws.next((m) => m.type === 'subscribed');
        legacy.send({ type: 'subscribe', requestId: 'r2', walletId: alice.wallet, assetId: sword });
        await legacy.next((m) => m.type === 'subscribed');
        const up = await patch(studio, { attributes: [{ trait_type: 'level', value: 99 }] });
        expect(up.status, up.text).toBe(200);
        const live = await ws.next((m) => m.type === 'assetUpdated');
        expect(live.data).toEqual(up.body);
        const old = await legacy.next((m) => m.type === 'assetUpdated');
        expect(old.data.metadataVersion).toBe(up.body.metadataVersion);
      } finally {
        ws.close();
        legacy.close();
      }
    });
  });
});

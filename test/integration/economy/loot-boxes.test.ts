// Issue 36: drop tables, loot boxes and verifiable draws through the real app over HTTP, on both
// databases: nested tables with exact odds published before any opening (and every refusal at
// creation), an opening as one operation (the box burned, the outcome minted, the nonce taken, the
// events under one op id, a replay by Idempotency-Key answering the same draw), refusals that draw
// nothing (not a box, a commitment no longer active, a box not held, a grant past its max supply:
// the nonce is not taken), pity with its per-wallet counter, a wallet opening boxes concurrently
// (consecutive nonces, no nonce twice), and every draw verified from the API's answers alone by
// scripts/lib/verify-draw.ts (the library of `npm run verify-draw`) once its seed is revealed (a
// tampered draw is not). Responses are checked against the contract by the test client; the
// ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDraw } from '../../../scripts/lib/verify-draw.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };

describe.each(DB_KINDS)('loot boxes on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let rival: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let inner: string;
  let outer: string;
  let chest: { id: string };

  const orm = () => t.app.orm as unknown as Orm;
  const { call, read, lastEventId } = economyHttp(
    () => t,
    () => alice,
  );
  const createTable = async (entries: unknown[], collection = 'vault') => {
    const made = await call(studio, 'POST', `/api/v1/collections/${collection}/drop-tables`, {
      name: 'Table',
      entries,
    });
    expect(made.status, made.text).toBe(201);
    return made.body.id as string;
  };
  const mintBoxes = async (name: string, to: HttpUser, count: number) => {
    const made = await call(studio, 'POST', '/api/v1/collections/vault/mint/batch', {
      items: Array.from({ length: count }, () => ({ to: to.wallet, nft: { name, metadata } })),
    });
    expect(made.status, made.text).toBe(201);
    return made.body.nfts.map((nft: { id: string }) => nft.id) as string[];
  };
  const commitment = async (user: HttpUser) => {
    const seed = await call(user, 'POST', '/api/v1/draw-seeds', { wallet: user.wallet });
    expect(seed.status, seed.text).toBe(200);
    return seed.body as { id: string; commitment: string; nextNonce: number };
  };
  const open = (
    user: HttpUser,
    boxId: string,
    assetId: string,
    seed: string,
    key?: string,
    clientSeed = 'lucky',
  ) =>
    call(
      user,
      'POST',
      `/api/v1/loot-boxes/${boxId}/open`,
      { wallet: user.wallet, assetId, clientSeed, seedCommitment: seed },
      key,
    );
  const get = (path: string) => read(path);

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, rival, alice, bob] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
    ]);
    for (const id of ['vault', 'other'])
      expect((await call(studio, 'POST', '/api/v1/collections', { id, name: id })).status).toBe(201);
    for (const [id, maxSupply] of [
      ['coins', undefined],
      ['shards', '10'],
    ] as const)
      expect(
        (
          await call(studio, 'POST', '/api/v1/currencies', {
            id,
            name: id,
            symbol: id.toUpperCase(),
            decimals: 0,
            collection: 'vault',
            metadata,
            ...(maxSupply && { maxSupply }),
          })
        ).status,
      ).toBe(201);
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(orm())).toEqual([]);
      await t.close();
    }
  });

  it('publishes exact odds of nested tables before anything is opened; refuses bad tables and boxes', async () => {
    inner = await createTable([
      { weight: 1, outcome: { assetId: 'coins', amount: '5' } },
      { weight: 1, outcome: { nft: { name: 'Dragon Egg', metadata } } },
    ]);
    outer = await createTable([
      { weight: 3, outcome: { assetId: 'coins', amount: '10' } },
      { weight: 1, outcome: { table: inner } },
      { weight: 1, outcome: null },
    ]);
    const table = await get(`/api/v1/drop-tables/${outer}`);
    expect(table.entries.map((e: { odds: string }) => e.odds)).toEqual(['3/5', '1/5', '1/5']);
    expect(table.totalWeight).toBe(5);
    const path = '/api/v1/collections/vault/loot-boxes';
    const body = { name: 'Chest', table: outer, paid: true };
    expect((await call(rival, 'POST', path, body)).status).toBe(403);
    expect((await call(alice, 'POST', path, body)).status).toBe(403);
    expect((await call(studio, 'POST', path, { ...body, pity: { after: 2, entry: 3 } })).status).toBe(400);
    expect((await call(studio, 'POST', '/api/v1/collections/other/loot-boxes', body)).status).toBe(404);
    const made = await call(studio, 'POST', path, body);
    expect(made.status, made.text).toBe(201);
    chest = made.body;
    expect(made.body.odds.map((o: { path: number[]; odds: string }) => [o.path, o.odds])).toEqual([
      [[0], '3/5'],
      [[1, 0], '1/10'],
      [[1, 1], '1/10'],
      [[2], '1/5'],
    ]);
    const again = await call(studio, 'POST', path, body);
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('/problems/loot-box-exists');
    // A table of another collection cannot be nested; the studio's table in another collection is refused.
    const foreign = await call(studio, 'POST', '/api/v1/collections/other/drop-tables', {
      name: 'x',
      entries: [{ weight: 1, outcome: { table: inner } }],
    });
    expect(foreign.status).toBe(404);
    const tooDeep = [inner];
    for (let depth = 0; depth < 4; depth++)
      tooDeep.push(await createTable([{ weight: 1, outcome: { table: tooDeep.at(-1) } }]));
    const deeper = await call(studio, 'POST', '/api/v1/collections/vault/drop-tables', {
      name: 'too deep',
      entries: [{ weight: 1, outcome: { table: tooDeep.at(-1) } }],
    });
    expect(deeper.status, deeper.text).toBe(400);
    expect((await get('/api/v1/collections/vault/loot-boxes')).data.map((b: { id: string }) => b.id)).toEqual(
      [chest.id],
    );
  });

  it('opens a box in one operation; a retry answers the same draw; the draw verifies once the seed is revealed', async () => {
    const [box, other] = await mintBoxes('Chest', alice, 2);
    const [sword] = await (async () => {
      const made = await call(studio, 'POST', '/api/v1/collections/vault/mint/batch', {
        items: [{ to: alice.wallet, nft: { name: 'Sword', metadata } }],
      });
      return made.body.nfts.map((n: { id: string }) => n.id);
    })();
    const seed = await commitment(alice);
    expect(seed.nextNonce).toBe(0);
    const notBox = await open(alice, chest.id, sword, seed.commitment);
    expect(notBox.status).toBe(409);
    expect(notBox.body.type).toBe('/problems/not-a-loot-box');
    const stale = await open(alice, chest.id, box, 'a'.repeat(64));
    expect(stale.status).toBe(409);
    expect(stale.body.type).toBe('/problems/draw-seed-changed');
    const foreign = await call(bob, 'POST', `/api/v1/loot-boxes/${chest.id}/open`, {
      wallet: alice.wallet,
      assetId: box,
      clientSeed: 'mine',
      seedCommitment: seed.commitment,
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body.type).toBe('/problems/wallet-not-controlled');

    const before = await lastEventId();
    const opened = await open(alice, chest.id, box, seed.commitment, 'open-1');
    expect(opened.status, opened.text).toBe(201);
    const { draw } = opened.body;
    expect(draw).toMatchObject({
      box: chest.id,
      assetId: box,
      nonce: 0,
      seed: seed.id,
      commitment: seed.commitment,
    });
    expect(opened.body.transfers[0]).toMatchObject({
      assetId: box,
      to: '0x0000000000000000000000000000000000000000',
    });
    expect((await get(`/assets/${box}`)).burned).toBe(true);
    expect(await get(`/api/v1/draws/${draw.id}`)).toEqual(draw);
    const events = (await get(`/api/v1/events?after=${before}&limit=100`)).data;
    expect(events.at(-1)).toMatchObject({ type: 'lootBoxOpened', data: draw, operationId: draw.id });
    expect(new Set(events.map((e: { operationId?: string }) => e.operationId))).toEqual(new Set([draw.id]));
    // The same key: the same draw, nothing more burned or drawn.
    const replay = await open(alice, chest.id, box, seed.commitment, 'open-1');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(opened.body);
    // A burned box is held by no one: opening it again is refused, and takes no nonce.
    const twice = await open(alice, chest.id, box, seed.commitment, 'open-2');
    expect(twice.status).toBe(409);
    expect(twice.body.type).toBe('/problems/insufficient-balance');
    expect((await commitment(alice)).nextNonce).toBe(1);

    const second = await open(alice, chest.id, other, seed.commitment, undefined, 'another value');
    expect(second.status, second.text).toBe(201);
    expect(second.body.draw.nonce).toBe(1);

    // Before the reveal nothing can be verified; after it, anyone recomputes both draws.
    expect(await verifyDraw(get, draw.id)).toEqual([`the seed ${seed.id} is not revealed yet`]);
    expect((await call(bob, 'POST', `/api/v1/draw-seeds/${seed.id}/reveal`)).status).toBe(403);
    const revealed = await call(alice, 'POST', `/api/v1/draw-seeds/${seed.id}/reveal`);
    expect(revealed.status, revealed.text).toBe(200);
    expect(revealed.body.revealed).toMatchObject({ status: 'revealed', nextNonce: 2 });
    expect(revealed.body.next.commitment).not.toBe(seed.commitment);
    expect((await call(alice, 'POST', `/api/v1/draw-seeds/${seed.id}/reveal`)).body.type).toBe(
      '/problems/draw-seed-changed',
    );
    expect(await verifyDraw(get, draw.id)).toEqual([]);
    expect(await verifyDraw(get, second.body.draw.id)).toEqual([]);
    // A draw whose published roll or outcome was altered does not verify.
    const tampered = async (path: string) => {
      const body = await get(path);
      if (!path.startsWith('/api/v1/draws/')) return body;
      const [roll] = body.rolls;
      const value = String((BigInt(roll.value) + 1n) % BigInt(roll.total));
      return { ...body, rolls: [{ ...roll, value }, ...body.rolls.slice(1)] };
    };
    expect(await verifyDraw(tampered, draw.id)).not.toEqual([]);
    // The revealed seed draws no more: an opening naming it is refused.
    const [third] = await mintBoxes('Chest', alice, 1);
    expect((await open(alice, chest.id, third, seed.commitment)).body.type).toBe(
      '/problems/draw-seed-changed',
    );
    expect((await open(alice, chest.id, third, revealed.body.next.commitment)).status).toBe(201);
  });

  it('pity gives its entry at the wallet’s n-th opening without it, and the counter is visible', async () => {
    const rare = await createTable([
      { weight: 999_999, outcome: { assetId: 'coins', amount: '1' } },
      { weight: 1, outcome: { nft: { name: 'Legend', metadata } } },
    ]);
    const made = await call(studio, 'POST', '/api/v1/collections/vault/loot-boxes', {
      name: 'Pity chest',
      table: rare,
      paid: false,
      pity: { after: 3, entry: 1 },
    });
    expect(made.status, made.text).toBe(201);
    const boxes = await mintBoxes('Pity chest', bob, 4);
    const seed = await commitment(bob);
    const draws = [];
    for (const box of boxes) {
      const opened = await open(bob, made.body.id, box, seed.commitment);
      expect(opened.status, opened.text).toBe(201);
      draws.push(opened.body.draw);
    }
    expect(draws.map((d) => [d.pity.countBefore, d.pity.applied, d.rolls[0].entry])).toEqual([
      [0, false, 0],
      [1, false, 0],
      [2, true, 0],
      [0, false, 0],
    ]);
    expect(draws[2].outcome).toEqual({ nft: { name: 'Legend', metadata } });
    expect((await get(`/api/v1/loot-boxes/${made.body.id}?wallet=${bob.wallet}`)).pityCount).toBe(1);
    await call(bob, 'POST', `/api/v1/draw-seeds/${seed.id}/reveal`);
    for (const draw of draws) expect(await verifyDraw(get, draw.id)).toEqual([]);
  });

  it('concurrent openings by one wallet take consecutive nonces; a refused opening draws nothing', async () => {
    const boxes = await mintBoxes('Chest', bob, 4);
    const seed = await commitment(bob);
    const answers = await Promise.all(boxes.map((box) => open(bob, chest.id, box, seed.commitment)));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201]);
    expect(answers.map((a) => a.body.draw.nonce).sort()).toEqual([0, 1, 2, 3]);

    const capped = await createTable([{ weight: 1, outcome: { assetId: 'shards', amount: '6' } }]);
    const made = await call(studio, 'POST', '/api/v1/collections/vault/loot-boxes', {
      name: 'Shard chest',
      table: capped,
      paid: false,
    });
    const [first, second] = await mintBoxes('Shard chest', bob, 2);
    expect((await open(bob, made.body.id, first, seed.commitment)).status).toBe(201);
    const past = await open(bob, made.body.id, second, seed.commitment);
    expect(past.status).toBe(409);
    expect(past.body.type).toBe('/problems/max-supply-exceeded');
    expect((await commitment(bob)).nextNonce).toBe(5);
    expect((await get(`/assets/${second}`)).burned).toBe(false);
  });
});

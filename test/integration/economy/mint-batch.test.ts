// Issue 21: batch mints (airdrops) through the real app over HTTP, on both databases; every response
// is checked against the contract by the test client, and the ledger's invariants after all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../../src/db/orm.ts';
import { DEFLATE_FROM_BYTES } from '../../../src/db/stored-answer.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { checkInvariants, type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const ZERO = '0x0000000000000000000000000000000000000000';
const metadata = { image: 'https://cdn.example.com/badge.png', attributes: [], creator: 'Example Studio' };

describe.each(DB_KINDS)('batch mints on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let rival: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;

  const call = (user: HttpUser, path: string, body: unknown, key?: string) =>
    t.http('POST', path, { body, headers: { ...user.headers, ...(key ? { 'idempotency-key': key } : {}) } });
  const read = async (path: string) => {
    const got = await t.http('GET', path, { headers: { ...alice.headers, 'cache-control': 'no-cache' } });
    expect(got.status, got.text).toBe(200);
    return got.body;
  };
  const events = async (after: string) =>
    (await read(`/api/v1/events?after=${after}&limit=100`)).data as {
      id: string;
      type: string;
      operationId?: string;
    }[];
  const lastEventId = async () => {
    let after = '0';
    for (let page = await events(after); page.length; page = await events(after))
      after = page[page.length - 1].id;
    return after;
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [studio, rival, alice, bob] = await Promise.all([
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t),
      httpUser(t),
    ]);
    for (const [owner, id] of [
      [studio, 'drop'],
      [rival, 'other'],
    ] as const) {
      expect((await call(owner, '/api/v1/collections', { id, name: id })).status).toBe(201);
    }
    for (const [owner, id, collection] of [
      [studio, 'gems', 'drop'],
      [rival, 'coins', 'other'],
    ] as const) {
      const created = await call(owner, '/api/v1/currencies', {
        id,
        name: id,
        symbol: id.toUpperCase(),
        decimals: 2,
        maxSupply: '1000',
        collection,
        metadata,
      });
      expect(created.status, created.text).toBe(201);
    }
  });

  afterAll(async () => {
    if (t) {
      expect(await checkInvariants(t.app.orm as unknown as Orm)).toEqual([]);
      await t.close();
    }
  });

  it('airdrops NFTs and currency to many wallets in one step, one event per holding, once per key', async () => {
    const before = await lastEventId();
    const items = [
      { to: alice.wallet, nft: { name: "Founder's Badge", metadata } },
      { to: bob.wallet, nft: { name: "Founder's Badge", description: 'Early player', metadata } },
      { to: alice.wallet, currency: 'gems', amount: '100.5' },
      { to: bob.wallet, currency: 'gems', amount: '50' },
    ];
    const batch = await call(studio, '/api/v1/collections/drop/mint/batch', { items }, 'drop-1');
    expect(batch.status, batch.text).toBe(201);
    expect(batch.body.id).toMatch(/^op_/);
    expect(
      batch.body.nfts.map((n: { owner: string; collection: string }) => [n.owner, n.collection]),
    ).toEqual([
      [alice.wallet, 'drop'],
      [bob.wallet, 'drop'],
    ]);
    expect(
      batch.body.mints.map((m: { from: string; to: string; amount: string }) => [m.from, m.to, m.amount]),
    ).toEqual([
      [ZERO, alice.wallet, '100.5'],
      [ZERO, bob.wallet, '50'],
    ]);
    const replay = await call(studio, '/api/v1/collections/drop/mint/batch', { items }, 'drop-1');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(batch.body);
    expect((await read('/assets/gems')).totalSupply).toBe('150.5');
    expect((await read(`/assets/${batch.body.nfts[1].id}`)).owner).toBe(bob.wallet);
    const seen = await events(before);
    expect(seen.map((e) => e.type)).toEqual(['newNFT', 'newNFT', 'newTransfer', 'newTransfer']);
    expect(seen.map((e) => e.operationId)).toEqual(seen.map(() => batch.body.id));
  });

  it('refuses a batch with one bad item, naming it, minting nothing', async () => {
    const nft = { to: alice.wallet, nft: { name: 'Badge', metadata } };
    const gems = { to: alice.wallet, currency: 'gems', amount: '1' };
    const before = await lastEventId();
    const cases: [HttpUser, string, unknown[], number, string, string][] = [
      // Each fits alone, together they pass the max supply of 1000 (150.5 minted already).
      [
        studio,
        'drop',
        [nft, { ...gems, amount: '500' }, { ...gems, amount: '400' }],
        409,
        '/problems/max-supply-exceeded',
        'Item 1: ',
      ],
      [studio, 'drop', [nft, { ...gems, amount: '0.001' }], 400, '/problems/invalid-amount', 'Item 1: '],
      [studio, 'drop', [nft, { ...gems, currency: 'coins' }], 404, '/problems/not-found', 'Item 1: '],
      [studio, 'drop', [nft, { ...gems, to: ZERO }], 400, '/problems/validation-failed', 'Item 1: '],
      [rival, 'drop', [nft], 403, '/problems/forbidden', ''],
      [alice, 'drop', [nft], 403, '/problems/role-not-allowed', ''],
      [studio, 'nope', [nft], 404, '/problems/not-found', ''],
      [studio, 'drop', [], 400, '/problems/validation-failed', ''],
      [studio, 'drop', Array.from({ length: 101 }, () => nft), 400, '/problems/validation-failed', ''],
    ];
    for (const [user, collection, items, status, type, label] of cases) {
      const refused = await call(user, `/api/v1/collections/${collection}/mint/batch`, { items });
      expect(refused.status, refused.text).toBe(status);
      expect(refused.body.type).toBe(type);
      if (label) expect(refused.body.detail).toMatch(new RegExp(`^${label}`));
    }
    expect((await read('/assets/gems')).totalSupply).toBe('150.5');
    expect(await events(before)).toEqual([]);
  });

  it('keeps a large answer deflated and replays it byte for byte (issue 34: bytes per holding)', async () => {
    const items = Array.from({ length: 12 }, (_, index) => ({
      to: index % 2 ? alice.wallet : bob.wallet,
      nft: { name: `Deflated ${index}`, metadata },
    }));
    const batch = await call(studio, '/api/v1/collections/drop/mint/batch', { items }, 'deflated-1');
    expect(batch.status, batch.text).toBe(201);
    expect(Buffer.byteLength(batch.text)).toBeGreaterThanOrEqual(DEFLATE_FROM_BYTES);
    const [record] = await t.app.orm.em
      .getConnection()
      .execute<{ response_body: unknown; response_deflated: Uint8Array | null }[]>(
        'select response_body, response_deflated from idempotency_record where id = ?',
        [`${studio.userId}:mintBatch:deflated-1`],
      );
    expect(record.response_body).toBeNull();
    expect(record.response_deflated?.length).toBeGreaterThan(0);
    expect(record.response_deflated?.length).toBeLessThan(Buffer.byteLength(batch.text) / 4);
    const replay = await call(studio, '/api/v1/collections/drop/mint/batch', { items }, 'deflated-1');
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(batch.text);
    // A small answer stays JSON.
    const small = await call(
      studio,
      '/api/v1/collections/drop/mint/batch',
      { items: [{ to: bob.wallet, nft: { name: 'Small', metadata } }] },
      'small-1',
    );
    expect(small.status, small.text).toBe(201);
    const [plain] = await t.app.orm.em
      .getConnection()
      .execute<{ response_body: unknown; response_deflated: unknown }[]>(
        'select response_body, response_deflated from idempotency_record where id = ?',
        [`${studio.userId}:mintBatch:small-1`],
      );
    expect(plain.response_deflated).toBeNull();
    expect(plain.response_body).not.toBeNull();
  });
});

// Issue 13.9: input the contract's formats let through must not reach code that cannot hold it. A
// leap second, a supply past 2^256-1 and a lone UTF-16 surrogate are each a 400 problem that stores
// nothing, on SQLite and PostgreSQL. Every response is checked against the contract.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { type HttpUser, httpUser } from '../helpers/ledger-fixtures.ts';
import { connect } from '../helpers/ws.ts';

const METADATA = { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' };
const UINT256_MAX = (1n << 256n) - 1n;
/** 2^256-1 base units of an 18-decimal currency, as an Amount string. */
const MAX_AMOUNT = `${UINT256_MAX / 10n ** 18n}.${(UINT256_MAX % 10n ** 18n).toString().padStart(18, '0')}`;

describe.each(DB_KINDS)('input at the edges of the formats on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let oracle: HttpUser;
  let player: HttpUser;

  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000' });
    [studio, oracle, player] = [await httpUser(t, 'studio'), await httpUser(t, 'oracle'), await httpUser(t)];
    const post = (path: string, body: unknown) => t.http('POST', path, { body, headers: studio.headers });
    expect((await post('/api/v1/collections', { id: 'edge-game', name: 'Edge' })).status).toBe(201);
    // 18 decimals: 2^256-1 base units is then 60 whole digits, the most an Amount may have.
    for (const id of ['edge-gold', 'edge-dust']) {
      const currency = await post('/api/v1/currencies', {
        id,
        name: id,
        symbol: 'EDGE',
        decimals: 18,
        collection: 'edge-game',
        metadata: METADATA,
      });
      expect(currency.status, currency.text).toBe(201);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('13.9: a leap-second timestamp in a price post is a 400 problem, not a 500, and stores nothing', async () => {
    const posted = await t.http('POST', '/api/v1/price/edge-gold', {
      body: { price: '1.5', currency: 'USD', source: 'leap', observedAt: '2016-12-31T23:59:60Z' },
      headers: oracle.headers,
    });
    expect([posted.status, posted.body.type], posted.text).toEqual([400, '/problems/validation-failed']);
    expect(posted.body.errors[0].pointer).toBe('/body/observedAt');
    const price = await t.http('GET', '/api/v1/price/edge-gold', { headers: player.headers });
    expect(price.status).toBe(404);
  });

  it('13.9: a leap-second timestamp in the price history range is a 400 problem, not a 500', async () => {
    for (const query of ['from=2016-12-31T23:59:60Z', 'to=2016-12-31T23:59:60.5%2B00:00']) {
      const history = await t.http('GET', `/api/v1/price/edge-gold/history?interval=1h&${query}`, {
        headers: player.headers,
      });
      expect([history.status, history.body.type], `${query}: ${history.text}`).toEqual([
        400,
        '/problems/validation-failed',
      ]);
    }
  });

  it('13.9: minting an uncapped currency past 2^256-1 is a 400 problem, not a 500, and changes nothing', async () => {
    const full = await t.http('POST', '/api/v1/currencies/edge-dust/mint', {
      body: { to: player.wallet, amount: MAX_AMOUNT },
      headers: studio.headers,
    });
    expect(full.status, full.text).toBe(201);
    const over = await t.http('POST', '/api/v1/currencies/edge-dust/mint', {
      body: { to: studio.wallet, amount: '0.000000000000000001' },
      headers: studio.headers,
    });
    expect([over.status, over.body.type], over.text).toEqual([400, '/problems/invalid-amount']);
    expect(over.body.errors[0].pointer).toBe('/body/amount');
    const asset = await t.http('GET', '/assets/edge-dust', { headers: player.headers });
    expect(asset.body.totalSupply).toBe(MAX_AMOUNT);
    const studioHoldings = await t.http('GET', `/wallets/${studio.wallet}/assets`, {
      headers: studio.headers,
    });
    expect(studioHoldings.body.data.map((h: { asset: { id: string } }) => h.asset.id)).not.toContain(
      'edge-dust',
    );
  });

  it('13.9: a lone UTF-16 surrogate in a JSON body is a 400 problem that never reaches storage or the event stream', async () => {
    const socket = await connect(`${t.baseUrl.replace(/^http/, 'ws')}/ws`, player.headers);
    try {
      socket.send({ type: 'subscribe', requestId: 's', events: ['newNFT'], walletId: player.wallet });
      expect((await socket.next((m) => m.requestId === 's')).type).toBe('subscribed');
      const before = (await t.http('GET', '/api/v1/assets', { headers: player.headers })).body.data.length;
      // Escaped in the JSON text, as JSON allows: JSON.stringify would write the surrogate as is.
      for (const [field, raw] of [
        ['/body/name', '{"name":"Sword \\ud800 of Dawn","metadata":METADATA}'],
        [
          '/body/metadata/creator',
          '{"name":"Sword","metadata":{"image":"https://x.example/a.png","attributes":[],"creator":"\\udc00"}}',
        ],
        [
          '/body/metadata/attributes/0/value',
          '{"name":"Sword","metadata":{"image":"https://x.example/a.png","attributes":[{"trait_type":"t","value":"a\\ud83d"}],"creator":"c"}}',
        ],
      ]) {
        const response = await t.http('POST', '/api/v1/nft/create', {
          raw: raw.replace('METADATA', JSON.stringify(METADATA)),
          headers: { ...player.headers, 'content-type': 'application/json' },
        });
        expect([response.status, response.body.type], `${field}: ${response.text}`).toEqual([
          400,
          '/problems/validation-failed',
        ]);
        expect(response.body.errors[0].pointer).toBe(field);
      }
      // A well-formed pair (an emoji) is fine.
      const emoji = await t.http('POST', '/api/v1/nft/create', {
        raw: `{"name":"Sword \\ud83d\\udde1","metadata":${JSON.stringify(METADATA)}}`,
        headers: { ...player.headers, 'content-type': 'application/json' },
      });
      expect(emoji.status, emoji.text).toBe(201);
      expect(emoji.body.name).toBe('Sword 🗡');
      const event = await socket.next((m) => m.type === 'newNFT');
      expect(event.data.id).toBe(emoji.body.id);
      const after = (await t.http('GET', '/api/v1/assets', { headers: player.headers })).body.data.length;
      expect(after).toBe(before + 1);
    } finally {
      socket.close();
    }
  });
});

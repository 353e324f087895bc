// Live delivery over /ws and /assets/subscribe of changes made through REST, the filters, and the
// REST catch-up (same events, same ids, paging, retention). Every server message is checked against
// the AsyncAPI contract by the test client, every response against the OpenAPI contract.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  createWorld,
  eventsFor,
  ids,
  isEvent,
  mintNft,
  newestId,
  ok,
  openSocket,
  postPrice,
  restEvents,
  STRANGER,
  subscribe,
  TEST_ENV,
  transfer,
  type World,
  waitForId,
} from './world.ts';

describe.each(DB_KINDS)('event delivery on %s', (kind) => {
  let t: TestApp;
  let w: World;

  beforeAll(async () => {
    t = await startTestApp(kind, TEST_ENV);
    w = await createWorld(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('delivers a transfer, a mint and a price to a wallet subscription, and nothing its filters exclude', async () => {
    const { player, other } = w;
    const start = await newestId(t, player);
    const socket = await openSocket(t, player);
    const wallet = await subscribe(socket, { walletId: player.wallet.toLowerCase() });
    expect(wallet).toMatchObject({
      events: [
        'newNFT',
        'newTransfer',
        'priceUpdate',
        'assetUpdated',
        'chainTransferPending',
        'chainTransferRemoved',
        'listingCreated',
        'listingEnded',
        'sale',
        'offerCreated',
        'offerEnded',
        'storePurchase',
        'lootBoxOpened',
        'auctionCreated',
        'auctionBid',
        'auctionEnded',
        'itemExpired',
      ],
      filters: { walletId: player.wallet, assetId: null, collection: null },
      replayFrom: null,
    });
    const goldTransfers = await subscribe(socket, {
      events: ['newTransfer'],
      walletId: player.wallet,
      assetId: 'gold',
    });
    const nightRaid = await subscribe(socket, { collection: 'night-raid' });
    const gemPrices = await subscribe(socket, { events: ['priceUpdate'], assetId: 'gems' });

    const sent = await transfer(w, player, 'gold', other.wallet, '7');
    const nft = await mintNft(w, player);
    const price = await postPrice(w, 'gold', '0.0125');
    await transfer(w, other, 'gold', STRANGER); // another wallet
    await transfer(w, other, 'gems', STRANGER); // another wallet, another collection
    await mintNft(w, w.studio, 'night-raid'); // another owner
    await postPrice(w, 'gems', '2');
    const last = await transfer(w, player, 'gems', STRANGER);
    const end = await newestId(t, player);
    await waitForId(socket, wallet.subscriptionId, end);

    const mine = eventsFor(socket, wallet.subscriptionId);
    expect(mine.map((event) => [event.type, event.data.id ?? event.data.assetId])).toEqual([
      ['newTransfer', sent.id],
      ['newNFT', nft.id],
      ['priceUpdate', 'gold'],
      ['priceUpdate', 'gems'],
      ['newTransfer', last.id],
    ]);
    expect(mine[0].data).toEqual(sent);
    expect(mine[1].data).toEqual(nft);
    expect(mine[2].data).toEqual(price);

    // Each subscription got exactly what GET /api/v1/events answers for the same filter.
    const cases: [string, Record<string, string>][] = [
      [wallet.subscriptionId, { walletId: player.wallet }],
      [goldTransfers.subscriptionId, { types: 'newTransfer', walletId: player.wallet, assetId: 'gold' }],
      [nightRaid.subscriptionId, { collection: 'night-raid' }],
      [gemPrices.subscriptionId, { types: 'priceUpdate', assetId: 'gems' }],
    ];
    for (const [subscriptionId, query] of cases) {
      const rest = await restEvents(t, player, start, query);
      expect(rest.length, JSON.stringify(query)).toBeGreaterThan(0);
      const received = eventsFor(socket, subscriptionId);
      expect(ids(received), JSON.stringify(query)).toEqual(ids(rest));
      // The same envelopes, plus the subscription ids.
      expect(received.map(({ subscriptionIds: _, ...envelope }) => envelope)).toEqual(rest);
    }
    // One message per event per connection, naming every subscription it matched.
    const live = socket.messages.filter(isEvent);
    expect(new Set(ids(live)).size).toBe(live.length);
    const gemPrice = live.find((m) => m.type === 'priceUpdate' && m.data.assetId === 'gems');
    expect(new Set(gemPrice?.subscriptionIds)).toEqual(
      new Set([wallet.subscriptionId, nightRaid.subscriptionId, gemPrices.subscriptionId]),
    );

    // After unsubscribe, nothing more for that subscription.
    socket.send({ type: 'unsubscribe', requestId: 'bye', subscriptionId: nightRaid.subscriptionId });
    expect(await socket.next((m) => m.requestId === 'bye')).toEqual({
      type: 'unsubscribed',
      requestId: 'bye',
      subscriptionId: nightRaid.subscriptionId,
    });
    await transfer(w, other, 'gems', STRANGER);
    const after = await postPrice(w, 'gems', '3');
    await socket.next((m) => m.type === 'priceUpdate' && m.data.observedAt === after.observedAt);
    expect(eventsFor(socket, nightRaid.subscriptionId).map((m) => m.id)).toEqual(
      ids(await restEvents(t, player, start, { collection: 'night-raid' })).slice(0, -2),
    );
    socket.close();
  });

  it('streams one wallet and one asset on /assets/subscribe, as the specification asks', async () => {
    const { player, other } = w;
    const start = await newestId(t, player);
    const socket = await openSocket(t, player, '/assets/subscribe');
    socket.send({ type: 'subscribe', walletId: player.wallet.toLowerCase(), assetId: 'gold' });
    const subscribed = await socket.next();
    expect(subscribed).toMatchObject({
      type: 'subscribed',
      requestId: null,
      events: [
        'newNFT',
        'newTransfer',
        'priceUpdate',
        'assetUpdated',
        'chainTransferPending',
        'chainTransferRemoved',
        'listingCreated',
        'listingEnded',
        'sale',
        'offerCreated',
        'offerEnded',
        'storePurchase',
        'lootBoxOpened',
        'auctionCreated',
        'auctionBid',
        'auctionEnded',
        'itemExpired',
      ],
      filters: { walletId: player.wallet, assetId: 'gold', collection: null },
      replayFrom: null,
    });
    const received = await transfer(w, other, 'gold', player.wallet, '3');
    await transfer(w, other, 'gold', STRANGER); // not the wallet
    await transfer(w, player, 'gems', STRANGER); // not the asset
    await mintNft(w, player); // not the asset
    await postPrice(w, 'gems');
    const price = await postPrice(w, 'gold', '0.02');
    const sent = await transfer(w, player, 'gold', STRANGER, '2');
    const events = await socket.collect(3, isEvent);
    await socket.next((m) => isEvent(m) && m.data.id === sent.id);
    expect(events.map((m) => m.data)).toEqual([received, price, sent]);
    expect(ids(events)).toEqual(
      ids(await restEvents(t, player, start, { walletId: player.wallet, assetId: 'gold' })),
    );
    socket.close();
  });

  it('serves the same events over REST: pages, filters and errors', async () => {
    const { player, other } = w;
    const start = await newestId(t, player);
    for (let i = 0; i < 5; i++) {
      await transfer(w, player, 'gold', other.wallet);
      await postPrice(w, 'gems', `1.${i}`);
    }
    const all = await restEvents(t, player, start);
    expect(all.map((event) => event.type)).toEqual(Array(5).fill(['newTransfer', 'priceUpdate']).flat());
    expect(ids(await restEvents(t, player, start, {}, 3))).toEqual(ids(all));
    const page = await ok(
      t.http('GET', `/api/v1/events?after=${start}&limit=4`, { headers: player.headers }),
      200,
    );
    expect(ids(page.data)).toEqual(ids(all.slice(0, 4)));
    expect(page.next_cursor).toBe(all[3].id);
    const tail = await ok(
      t.http('GET', `/api/v1/events?after=${all[9].id}`, { headers: player.headers }),
      200,
    );
    expect(tail).toMatchObject({ data: [], next_cursor: null });
    expect(ids(await restEvents(t, player, start, { types: 'priceUpdate' }))).toEqual(
      ids(all.filter((event) => event.type === 'priceUpdate')),
    );
    expect(
      ids(await restEvents(t, player, start, { walletId: other.wallet.toLowerCase(), types: 'newTransfer' })),
    ).toEqual(ids(all.filter((event) => event.type === 'newTransfer')));
    const badChecksum = STRANGER.replace('0xdb', '0xDb');
    const bad = await t.http('GET', `/api/v1/events?walletId=${badChecksum}`, { headers: player.headers });
    expect(bad.body).toMatchObject({ status: 400, type: '/problems/invalid-address-checksum' });
    expect((await t.http('GET', '/api/v1/events?types=newSword', { headers: player.headers })).status).toBe(
      400,
    );
    expect((await t.http('GET', '/api/v1/events?after=-1', { headers: player.headers })).status).toBe(400);
    expect((await t.http('GET', '/api/v1/events')).status).toBe(401);
  });

  // Last: pruning removes every event so far.
  it('answers 410 over REST and resync_required over WebSocket for points retention removed or not yet reached', async () => {
    const { player } = w;
    const newest = Number(await newestId(t, player));
    const removed = await t.app.events.store.prune(new Date());
    expect(removed).toBeGreaterThan(0);
    const gone = await t.http('GET', '/api/v1/events?after=1', { headers: player.headers });
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ type: '/problems/resync-required', oldestEventId: null });
    expect(await ok(t.http('GET', '/api/v1/events', { headers: player.headers }), 200)).toEqual({
      data: [],
      next_cursor: null,
      oldestEventId: null,
      // Removed by retention, still the newest id given: the resume point that misses nothing.
      newestEventId: String(newest),
    });

    const socket = await openSocket(t, player);
    for (const lastEventId of ['1', String(newest + 5)]) {
      socket.send({ type: 'subscribe', requestId: `r${lastEventId}`, lastEventId });
      expect(await socket.next((m) => m.requestId === `r${lastEventId}`)).toMatchObject({
        type: 'resync_required',
        subscriptionId: null,
        requestedEventId: lastEventId,
        oldestEventId: null,
      });
    }
    // The watermark itself is a valid resume point: nothing after it was removed.
    const resumed = await subscribe(socket, { lastEventId: String(newest) });
    expect(await socket.next((m) => m.type === 'replayed')).toEqual({
      type: 'replayed',
      subscriptionId: resumed.subscriptionId,
      lastEventId: null,
      count: 0,
    });
    const price = await postPrice(w, 'gold');
    const event = await socket.next(isEvent);
    expect(event.data).toEqual(price);
    const page = await ok(t.http('GET', `/api/v1/events?after=${newest}`, { headers: player.headers }), 200);
    expect(page).toMatchObject({ data: [{ id: event.id }], oldestEventId: event.id });
    socket.close();
  });
});

// Resume without gaps: reconnecting with lastEventId replays exactly the missed events, in order,
// then `replayed`, then live events, also while writers commit events during the hand-over; and a
// consumer too slow to keep up is closed with 4008 and resumes from its last event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { ServerMessage, TestSocket } from '../../helpers/ws.ts';
import {
  createWorld,
  ids,
  isEvent,
  mintNft,
  newestId,
  openSocket,
  postPrice,
  restEvents,
  sleep,
  subscribe,
  TEST_ENV,
  transfer,
  type World,
} from './world.ts';

/** What a connection saw, for order checks: event ids, and `replayed` markers. */
const transcript = (socket: TestSocket) =>
  socket.messages.map((m) => (isEvent(m) ? m.id : m.type === 'replayed' ? 'replayed' : m.type));

function expectIncreasing(events: ServerMessage[]): void {
  for (let i = 1; i < events.length; i++)
    expect(Number(events[i].id)).toBeGreaterThan(Number(events[i - 1].id));
}

/** An NFT of about 40 KiB of metadata: few of them fill socket buffers. */
const bulky = (n: number) => ({
  description: `Bulky item ${n}`,
  metadata: {
    image: 'https://cdn.example.com/bulky.png',
    creator: 'Example Studio',
    attributes: Array.from({ length: 64 }, (_, i) => ({ trait_type: `trait-${i}`, value: 'x'.repeat(500) })),
  },
});

describe.each(DB_KINDS)('resume on %s', (kind) => {
  let t: TestApp;
  let w: World;

  beforeAll(async () => {
    t = await startTestApp(kind, { ...TEST_ENV, WS_MAX_BUFFERED_BYTES: '16384' });
    w = await createWorld(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('replays exactly the missed events in order, then replayed, then live ones', async () => {
    const { player, other } = w;
    const socket = await openSocket(t, player);
    await subscribe(socket, { assetId: 'gold' });
    await postPrice(w, 'gold');
    const seen = await socket.next(isEvent);
    socket.close();
    await socket.closed;

    for (let i = 0; i < 3; i++) {
      await transfer(w, player, 'gold', other.wallet);
      await postPrice(w, 'gems'); // not gold: never replayed
      await postPrice(w, 'gold');
    }
    const missed = await restEvents(t, player, seen.id, { assetId: 'gold' });
    expect(missed).toHaveLength(6);

    const resumed = await openSocket(t, player);
    const subscribed = await subscribe(resumed, { assetId: 'gold', lastEventId: seen.id });
    expect(subscribed.replayFrom).toBe(seen.id);
    expect(await resumed.next((m) => m.type === 'replayed')).toEqual({
      type: 'replayed',
      subscriptionId: subscribed.subscriptionId,
      lastEventId: missed[5].id,
      count: 6,
    });
    const live = await postPrice(w, 'gold');
    const liveEvent = await resumed.next((m) => isEvent(m) && m.data.observedAt === live.observedAt);
    expect(transcript(resumed)).toEqual(['subscribed', ...ids(missed), 'replayed', liveEvent.id]);
    expect(
      resumed.messages
        .filter(isEvent)
        .slice(0, 6)
        .map(({ subscriptionIds: _, ...e }) => e),
    ).toEqual(missed);
    resumed.close();
  });

  it('loses and repeats nothing across reconnections while writers commit events', async () => {
    const { player, other } = w;
    const start = await newestId(t, player);
    let writing = true;
    const writer = async (step: (i: number) => Promise<unknown>) => {
      for (let i = 0; writing; i++) await step(i);
    };
    const writers = Promise.all([
      writer((i) => postPrice(w, i % 2 ? 'gold' : 'gems', `2.${i}`)),
      writer(() => transfer(w, player, 'gold', other.wallet)),
      writer(() => transfer(w, other, 'gems', player.wallet)),
    ]);

    const received: ServerMessage[] = [];
    let last = start;
    for (let round = 0; round < 5; round++) {
      const socket = await openSocket(t, player);
      const subscribed = await subscribe(socket, { assetId: 'gold', lastEventId: last });
      await socket.next((m) => m.type === 'replayed', 10_000);
      await sleep(100);
      // Half the time a clean close, half an abrupt one.
      if (round % 2) socket.ws.terminate();
      else socket.close();
      await socket.closed;
      const events = socket.messages.filter(isEvent);
      expect(events.every((m) => m.subscriptionIds[0] === subscribed.subscriptionId)).toBe(true);
      expectIncreasing(events);
      received.push(...events);
      if (events.length > 0) last = events[events.length - 1].id;
      await sleep(100); // events are committed while the client is away
    }
    writing = false;
    await writers;

    const expected = await restEvents(t, player, start, { assetId: 'gold' });
    expect(expected.length).toBeGreaterThan(20);
    const final = await openSocket(t, player);
    await subscribe(final, { assetId: 'gold', lastEventId: last });
    await final.next((m) => m.type === 'replayed', 10_000);
    // The replay covers what the relay had settled; anything committed after that follows live.
    const lastExpected = expected[expected.length - 1].id;
    if (last !== lastExpected) await final.next((m) => isEvent(m) && m.id === lastExpected, 10_000);
    received.push(...final.messages.filter(isEvent));
    final.close();

    expect(ids(received)).toEqual(ids(expected));
  });

  it('closes a consumer that stops reading with 4008, which then resumes with lastEventId and gets everything', async () => {
    const { player } = w;
    const start = await newestId(t, player);
    const socket = await openSocket(t, player);
    const subscribed = await subscribe(socket, { events: ['newNFT'], walletId: player.wallet });
    const tcp = (socket.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    tcp.pause();
    // About 6 MiB of events, more than the kernel buffers of a loopback connection take.
    const minted: { id: string }[] = [];
    for (let batch = 0; batch < 20; batch++) {
      minted.push(
        ...(await Promise.all(
          Array.from({ length: 8 }, (_, i) => mintNft(w, player, undefined, bulky(batch * 8 + i))),
        )),
      );
    }
    tcp.resume();
    expect((await socket.closed).code).toBe(4008);
    const before = socket.messages.filter(isEvent);
    expect(before.length).toBeLessThan(minted.length);
    expectIncreasing(before);
    expect(before.every((m) => m.subscriptionIds[0] === subscribed.subscriptionId)).toBe(true);

    const resumed = await openSocket(t, player);
    await subscribe(resumed, {
      events: ['newNFT'],
      walletId: player.wallet,
      lastEventId: before.at(-1)?.id ?? start,
    });
    await resumed.next((m) => m.type === 'replayed', 20_000);
    const all = [...before, ...resumed.messages.filter(isEvent)];
    expect(ids(all)).toEqual(
      ids(await restEvents(t, player, start, { types: 'newNFT', walletId: player.wallet })),
    );
    expect(all).toHaveLength(minted.length);
    expect(new Set(all.map((m) => m.data.id))).toEqual(new Set(minted.map((nft) => nft.id)));
    resumed.close();

    // The replay is paced to the client: megabytes of history reach a reader without a 4008.
    const history = await openSocket(t, player);
    await subscribe(history, { events: ['newNFT'], walletId: player.wallet, lastEventId: start });
    const outcome = await Promise.race([
      history.next((m) => m.type === 'replayed', 20_000),
      history.closed.then(({ code }) => ({ type: 'closed', code })),
    ]);
    expect(outcome).toMatchObject({ type: 'replayed', count: minted.length });
    expect(ids(history.messages.filter(isEvent))).toEqual(ids(all));
    history.close();
  });
});

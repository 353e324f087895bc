// Issue 38: the official client's events stream against the real service. Every
// event of its subscription reaches the handler exactly once and in id order, compared with the REST
// event log: across connections the service drops without a close frame, across a connection that
// goes silent (found by the client's heartbeat), and across `resync_required` (caught up over REST).
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  type EventStream,
  type GatsEvent,
  pollEvents,
  type StreamState,
  streamEvents,
  type WebSocketFactory,
  type WebSocketLike,
} from '../../clients/typescript/src/index.ts';
import { nodeWebSocket } from '../../clients/typescript/src/node.ts';
import type { ResyncRequiredMessage } from '../../generated/asyncapi/models/index.ts';
import type { TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/evm-node.ts';
import type { HttpUser } from '../helpers/ledger-fixtures.ts';
import { checkFrame, clientFor, METADATA, type SharedApp } from './fixture.ts';

/**
 * A factory of `ws` sockets (headers) whose first connection (`count` returns 0) has some methods
 * replaced: a connection at fault, the following ones sound.
 */
function faultyFirst(
  count: () => number,
  fault: (socket: WebSocketLike) => Partial<WebSocketLike>,
): WebSocketFactory {
  return (url, headers) => {
    const socket = nodeWebSocket(url, headers);
    if (count() > 0) return socket;
    return {
      get readyState() {
        return socket.readyState;
      },
      send: (data) => socket.send(data),
      close: (code, reason) => socket.close(code, reason),
      addEventListener: (type, listener) => socket.addEventListener(type, listener),
      ...fault(socket),
    };
  };
}

/** Resolves once `predicate` holds, polled every 20 ms. */
async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The events client against the app of `shared` (test/client/client.test.ts). */
export function eventTests(shared: () => SharedApp): void {
  let t: TestApp;
  let player: HttpUser;
  /** The service's ends of the WebSocket connections, to drop them as a crash would. */
  let sockets: Set<Duplex>;
  const streams: EventStream[] = [];

  beforeAll(() => {
    // A user of its own: the other tests' events are not in its wallet's stream.
    ({ t, watcher: player, sockets } = shared());
  });
  afterAll(async () => {
    await Promise.all(streams.map((stream) => stream.stop()));
  });

  async function mint(count: number, between?: (index: number) => Promise<void>): Promise<string[]> {
    const gats = clientFor(t, player);
    const ids: string[] = [];
    for (let index = 0; index < count; index++) {
      await between?.(index);
      const { data } = await gats.POST('/api/v1/nft/create', {
        body: { name: `Item ${index}`, metadata: METADATA },
      });
      ids.push(data?.id as string);
    }
    return ids;
  }

  /** The newNFT events of the player's wallet after `after`, as the REST log has them. */
  async function logAfter(after: string | undefined): Promise<string[]> {
    const query = `walletId=${player.wallet}&types=newNFT&limit=1000${after ? `&after=${after}` : ''}`;
    const page = await t.http('GET', `/api/v1/events?${query}`, { headers: player.headers });
    return page.body.data.map((event: GatsEvent) => event.id);
  }

  function stream(options: {
    lastEventId?: string;
    webSocket?: WebSocketFactory;
    headers?: boolean;
    onResync?: (message: ResyncRequiredMessage) => Promise<void>;
  }) {
    const received: GatsEvent[] = [];
    const states: StreamState[] = [];
    const errors: unknown[] = [];
    const frames: string[] = [];
    const handle = streamEvents({
      client: clientFor(t, player),
      walletId: player.wallet,
      events: ['newNFT'],
      lastEventId: options.lastEventId,
      auth: options.headers ? 'headers' : 'ticket',
      webSocket: options.webSocket ?? (options.headers ? nodeWebSocket : undefined),
      reconnect: { baseDelayMs: 50, maxDelayMs: 400 },
      pingIntervalMs: 100,
      idleTimeoutMs: 600,
      onEvent: async (event) => {
        received.push(event);
      },
      onState: (state) => states.push(state),
      onError: (error) => errors.push(error),
      onResync: options.onResync,
      onFrame: (message) => {
        checkFrame(message);
        frames.push(message.type);
      },
    });
    streams.push(handle);
    return { handle, received, states, errors, frames };
  }

  function expectOnceInOrder(received: GatsEvent[], expected: string[]): void {
    expect(received.map((event) => event.id)).toEqual(expected);
  }

  it('delivers every event once and in order across connections the service drops (ticket)', async () => {
    const [before] = await logAfter(undefined).then((ids) => ids.slice(-1));
    const s = stream({});
    await until(() => s.handle.state === 'live', 'live');
    // Dropped as a killed instance drops them: no close frame; the client resumes from its last id.
    await mint(9, async (index) => {
      if (index !== 3 && index !== 6) return;
      // Each time on a connection that is live again: two disconnections, not one.
      await until(() => s.handle.state === 'live' && sockets.size > 0, 'a live connection');
      for (const socket of sockets) socket.destroy();
    });
    const expected = await logAfter(before);
    expect(expected).toHaveLength(9);
    await until(() => s.received.length >= 9, 'nine events');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expectOnceInOrder(s.received, expected);
    expect(s.states.filter((state) => state === 'offline').length).toBeGreaterThanOrEqual(2);
    expect(s.states.at(-1)).toBe('live');
    await s.handle.stop();
    expect(s.handle.state).toBe('closed');
  });

  it('replaces a connection that went silent, and misses nothing (headers, through ws)', async () => {
    const [before] = await logAfter(undefined).then((ids) => ids.slice(-1));
    let silenced = 0;
    // The first connection stops bringing anything after `subscribed`, as a half-open one would.
    let mute = false;
    const silencing = faultyFirst(
      () => silenced++,
      (socket) => ({
        addEventListener: (type, listener) =>
          socket.addEventListener(type, (event: { data?: unknown }) => {
            if (type === 'message' && mute) return;
            if (type === 'message' && String(event.data).includes('"subscribed"')) mute = true;
            listener(event);
          }),
      }),
    );
    const s = stream({ headers: true, webSocket: silencing, lastEventId: before });
    await until(() => s.states.includes('live') || s.states.includes('catching-up'), 'subscribed');
    await mint(3);
    const expected = await logAfter(before);
    await until(() => s.received.length >= 3, 'three events after the silence');
    expectOnceInOrder(s.received, expected);
    expect(silenced).toBeGreaterThanOrEqual(2);
    expect(s.states).toContain('offline');
    await s.handle.stop();
  });

  it('keeps trying while the service refuses connections, and misses nothing (headers, through ws)', async () => {
    const [before] = await logAfter(undefined).then((ids) => ids.slice(-1));
    // The first two handshakes go to a port nothing listens on: ws reports ECONNREFUSED as an
    // `error` event, which, with no listener, used to throw out of the process (found by npm run watch).
    const closedPort = await freePort();
    let attempts = 0;
    const refusing: WebSocketFactory = (url, headers) =>
      nodeWebSocket(attempts++ < 2 ? url.replace(/:\d+\//, `:${closedPort}/`) : url, headers);
    const s = stream({ headers: true, webSocket: refusing, lastEventId: before });
    await until(() => s.handle.state === 'live' || s.handle.state === 'catching-up', 'subscribed');
    await mint(2);
    await until(() => s.received.length >= 2, 'the events, once the service answers');
    expectOnceInOrder(s.received, await logAfter(before));
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(s.states.filter((state) => state === 'offline').length).toBeGreaterThanOrEqual(2);
    await s.handle.stop();
  });

  it('replaces a connection whose subscribe is never answered (pongs alone do not count)', async () => {
    const [before] = await logAfter(undefined).then((ids) => ids.slice(-1));
    let connections = 0;
    // The first connection's subscribe is lost on the way: the service answers only the pings.
    const losing = faultyFirst(
      () => connections++,
      (socket) => ({
        send: (data) => {
          if (!data.includes('"subscribe"')) socket.send(data);
        },
      }),
    );
    const s = stream({ headers: true, webSocket: losing, lastEventId: before });
    await mint(2);
    await until(() => s.received.length >= 2, 'the events, on a second connection');
    expectOnceInOrder(s.received, await logAfter(before));
    expect(connections).toBeGreaterThanOrEqual(2);
    await s.handle.stop();
  });

  it('turns resync_required into a REST catch-up, then goes on live', async () => {
    const [before] = await logAfter(undefined).then((ids) => ids.slice(-1));
    await mint(10);
    const s = stream({ lastEventId: before });
    await until(() => s.received.length >= 10, 'the catch-up');
    await until(() => s.handle.state === 'live', 'live after the catch-up');
    await mint(2);
    await until(() => s.received.length >= 12, 'live events after the catch-up');
    expectOnceInOrder(s.received, await logAfter(before));
    expect(s.frames.filter((type) => type === 'resync_required')).toHaveLength(1);
    expect(s.states).toContain('catching-up');
    expect(s.errors).toEqual([]);
    await s.handle.stop();
  });

  it('after resync_required that cannot be caught up (not_yet), has the state reloaded, then goes on from the newest event', async () => {
    const newest = (await logAfter(undefined)).at(-1) as string;
    const resyncs: string[] = [];
    let mintedDuringReload: string[] = [];
    // A resume point the service never gave (as after a restore to an older backup).
    const s = stream({
      lastEventId: String(BigInt(newest) + 1000n),
      onResync: async (message) => {
        resyncs.push(message.reason);
        // An event committed while the caller reloads its state is delivered, not lost.
        mintedDuringReload = await mint(1);
      },
    });
    await until(() => s.handle.state === 'live', 'live after the resync');
    await mint(1);
    await until(() => s.received.length >= 2, 'the events after the resync');
    expect(resyncs).toEqual(['not_yet']);
    expect(s.received.map((event) => event.type === 'newNFT' && event.data.id)).toContain(
      mintedDuringReload[0],
    );
    expectOnceInOrder(s.received, await logAfter(newest));
    await s.handle.stop();
  });

  it('polls the REST event log: every event once, in order, then new ones', async () => {
    const [before] = await logAfter(undefined).then((ids) => ids.slice(-2, -1));
    const stop = new AbortController();
    const seen: string[] = [];
    const gats = clientFor(t, player);
    const polling = (async () => {
      for await (const event of pollEvents(gats, {
        after: before,
        walletId: player.wallet,
        events: ['newNFT'],
        intervalMs: 50,
        signal: stop.signal,
      })) {
        seen.push(event.id);
      }
    })();
    await until(() => seen.length >= 1, 'the retained event');
    await mint(2);
    await until(() => seen.length >= 3, 'the new events');
    stop.abort();
    await polling;
    expect(seen).toEqual(await logAfter(before));
  });
}

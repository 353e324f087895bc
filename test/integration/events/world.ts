// A small game for the events tests: two collections with one currency each, a studio, an oracle
// and two players, plus helpers to make changes through REST and to read them back over REST and
// WebSocket.
import { expect } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { connect, type ServerMessage, type TestSocket } from '../../helpers/ws.ts';

export const STRANGER = '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB';
export const EVENT_TYPES = new Set([
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
]);

/** Limits high enough that the tests never meet the REST rate limits. */
export const TEST_ENV = {
  RATE_LIMIT_REQUESTS: '1000000',
  RATE_LIMIT_USER_REQUESTS: '1000000',
  LOGIN_RATE_LIMIT_REQUESTS: '100000',
};

export interface World {
  t: TestApp;
  studio: HttpUser;
  oracle: HttpUser;
  player: HttpUser;
  other: HttpUser;
}

export interface Envelope {
  id: string;
  type: string;
  occurredAt: string;
  data: Record<string, any>;
}

export async function ok<T = any>(
  response: Promise<{ status: number; body: T; text: string }>,
  status = 201,
): Promise<T> {
  const { status: actual, body, text } = await response;
  expect(actual, text).toBe(status);
  return body;
}

/** Collections `dawn-quest` (currency `gold`) and `night-raid` (currency `gems`); both players hold both. */
export async function createWorld(t: TestApp): Promise<World> {
  const [studio, oracle, player, other] = await Promise.all([
    httpUser(t, 'studio'),
    httpUser(t, 'oracle'),
    httpUser(t, 'player'),
    httpUser(t, 'player'),
  ]);
  for (const [collection, currency] of [
    ['dawn-quest', 'gold'],
    ['night-raid', 'gems'],
  ]) {
    await ok(
      t.http('POST', '/api/v1/collections', {
        body: { id: collection, name: collection },
        headers: studio.headers,
      }),
    );
    await ok(
      t.http('POST', '/api/v1/currencies', {
        headers: studio.headers,
        body: {
          id: currency,
          name: currency,
          symbol: currency.toUpperCase(),
          decimals: 0,
          collection,
          metadata: { image: 'https://cdn.example.com/coin.png', attributes: [], creator: 'Example Studio' },
        },
      }),
    );
    for (const holder of [player, other]) {
      await ok(
        t.http('POST', `/api/v1/currencies/${currency}/mint`, {
          headers: studio.headers,
          body: { to: holder.wallet, amount: '1000000' },
        }),
      );
    }
  }
  return { t, studio, oracle, player, other };
}

export function transfer(w: World, from: HttpUser, assetId: string, to: string, amount = '1') {
  return ok(
    w.t.http('POST', '/api/v1/transfer', {
      headers: from.headers,
      body: { assetId, from: from.wallet, to, amount },
    }),
  );
}

let observed = 0;
export function postPrice(w: World, assetId: string, price = '1.5') {
  // Distinct observation times keep every post a new price (and a new event).
  observed += 1;
  return ok(
    w.t.http('POST', `/api/v1/price/${assetId}`, {
      headers: w.oracle.headers,
      body: {
        price,
        currency: 'USD',
        source: 'test-oracle',
        observedAt: new Date(Date.now() - 60_000 + observed).toISOString(),
      },
    }),
  );
}

/** Into `collection` (its owner's) or, without one, into the owner's personal collection. */
export function mintNft(w: World, owner: HttpUser, collection?: string, extra: Record<string, unknown> = {}) {
  return ok(
    w.t.http('POST', '/api/v1/nft/create', {
      headers: owner.headers,
      body: {
        name: 'Sword of Dawn',
        ...(collection === undefined ? {} : { collection }),
        metadata: { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' },
        ...extra,
      },
    }),
  );
}

/** Every event after `after` matching the query, read page by page from GET /api/v1/events. */
export async function restEvents(
  t: TestApp,
  user: HttpUser,
  after: string,
  query: Record<string, string> = {},
  limit = 1000,
): Promise<Envelope[]> {
  const events: Envelope[] = [];
  let cursor: string | null = after;
  while (cursor !== null) {
    const params: URLSearchParams = new URLSearchParams({ ...query, after: cursor, limit: String(limit) });
    const page: { data: Envelope[]; next_cursor: string | null } = await ok<{
      data: Envelope[];
      next_cursor: string | null;
    }>(t.http('GET', `/api/v1/events?${params}`, { headers: user.headers }), 200);
    events.push(...page.data);
    cursor = page.next_cursor;
  }
  return events;
}

/** The id of the newest event (the point a test starts from). */
export async function newestId(t: TestApp, user: HttpUser): Promise<string> {
  const events = await restEvents(t, user, '0');
  return events.length === 0 ? '0' : events[events.length - 1].id;
}

export function wsUrl(t: TestApp, channel = '/ws'): string {
  return t.baseUrl.replace(/^http/, 'ws') + channel;
}

export function openSocket(t: TestApp, user: HttpUser, channel = '/ws'): Promise<TestSocket> {
  return connect(wsUrl(t, channel), user.headers);
}

let requests = 0;
/** Sends a subscribe and resolves with its `subscribed` answer (fails on any other answer). */
export async function subscribe(
  socket: TestSocket,
  message: Record<string, unknown> = {},
): Promise<ServerMessage> {
  requests += 1;
  const requestId = `req-${requests}`;
  socket.send({ type: 'subscribe', requestId, ...message });
  const answer = await socket.next((m) => m.requestId === requestId);
  expect(answer.type, JSON.stringify(answer)).toBe('subscribed');
  return answer;
}

export const isEvent = (message: ServerMessage) => EVENT_TYPES.has(message.type);

/** Events the socket received for one subscription, in arrival order. */
export function eventsFor(socket: TestSocket, subscriptionId: string): ServerMessage[] {
  return socket.messages.filter((m) => isEvent(m) && m.subscriptionIds.includes(subscriptionId));
}

export const ids = (events: readonly Record<string, any>[]): string[] => events.map((event) => event.id);

/** Resolves once the socket holds an event with id >= `id` for the subscription. */
export function waitForId(socket: TestSocket, subscriptionId: string, id: string, timeoutMs = 10_000) {
  return socket.next(
    (m) => isEvent(m) && m.subscriptionIds.includes(subscriptionId) && Number(m.id) >= Number(id),
    timeoutMs,
  );
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Replay is bounded (finding 13.2): a subscribe storm from "0" by one user must not hold up other
// clients; a resume point too far back answers resync_required with a REST catch-up link; the
// replays of one connection run one at a time; and a subscribe that meets an unavailable database
// gets a retryable `unavailable` error (finding 14.3), then works once the database is back.
import { renameSync } from 'node:fs';
import { MikroORM } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { validateServerMessage } from '../../../scripts/lib/server-messages.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import type { ServerMessage, TestSocket } from '../../helpers/ws.ts';
import {
  createWorld,
  isEvent,
  newestId,
  openSocket,
  restEvents,
  sleep,
  TEST_ENV,
  transfer,
  type World,
  wsUrl,
} from './world.ts';

const MAX_REPLAY_EVENTS = 600;
/** Events made in beforeAll: more than MAX_REPLAY_EVENTS, so that a replay from "0" is refused. */
const EVENTS = 1300;

/** A connection that only counts what it is sent (cheap: the storm sends thousands of messages). */
interface RawClient {
  ws: WebSocket;
  messages: ServerMessage[];
}

async function rawClient(t: TestApp, user: HttpUser): Promise<RawClient> {
  const ws = new WebSocket(wsUrl(t), { headers: user.headers, perMessageDeflate: false });
  const messages: ServerMessage[] = [];
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as ServerMessage;
    // Every answer is checked against the contract; the events of a replay are many, and their
    // schema is checked by the other tests of this folder.
    if (!isEvent(message)) validateServerMessage(message);
    messages.push(message);
  });
  ws.on('error', () => {});
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('unexpected-response', (_request, response) =>
      reject(new Error(`handshake refused: ${response.statusCode}`)),
    );
  });
  return { ws, messages };
}

/** Latencies (ms) of another user's /healthz and wallet reads, one after the other, until `stop`. */
async function probe(t: TestApp, user: HttpUser, stop: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  while (!stop()) {
    for (const path of ['/healthz', `/wallets/${user.wallet}/assets`]) {
      const started = performance.now();
      const response = await t.http('GET', path, { headers: user.headers });
      expect(response.status).toBe(200);
      latencies.push(performance.now() - started);
    }
    await sleep(10);
  }
  return latencies;
}

/**
 * The bystander's requests stayed fast: half of them under 300 ms, and none over 2.5 s. Replays that
 * held the event loop delayed most of them by seconds; the whole suite beside this test (three files
 * at once and the static checks on two cores) delays a few by up to about a second on a slow machine:
 * a storm answered in a few seconds leaves ~16 requests, of which the 95th percentile is the worst
 * itself (851 ms in a CI run), so the median and the worst are bounded.
 */
function expectStayedFast(latencies: number[]): void {
  const sorted = [...latencies].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  expect(median, `median of ${sorted.length} bystander requests`).toBeLessThan(300);
  expect(sorted.at(-1), `worst of ${sorted.length} bystander requests`).toBeLessThan(2_500);
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe.each(DB_KINDS)('bounded replay on %s', (kind) => {
  let t: TestApp;
  let w: World;
  let newest: number;

  beforeAll(async () => {
    t = await startTestApp(kind, { ...TEST_ENV, WS_MAX_REPLAY_EVENTS: String(MAX_REPLAY_EVENTS) });
    w = await createWorld(t);
    for (let made = 0; made < EVENTS; made += 50)
      await Promise.all(Array.from({ length: 50 }, () => transfer(w, w.player, 'gold', w.other.wallet)));
    newest = Number(await newestId(t, w.player));
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('13.2: 1,000 subscribes from "0" by one user leave another client\'s /healthz and reads fast', async () => {
    const stormer = await httpUser(t);
    const bystander = await httpUser(t);
    const clients = await Promise.all(Array.from({ length: 50 }, () => rawClient(t, stormer)));
    // The first listing answered from the database starts the listings' thread (SQLite), which takes
    // a moment of its own: that is not what this test measures.
    expect(
      (await t.http('GET', `/wallets/${bystander.wallet}/assets`, { headers: bystander.headers })).status,
    ).toBe(200);
    let done = false;
    const latencies = probe(t, bystander, () => done);
    await sleep(100);
    try {
      for (const client of clients) {
        for (let n = 0; n < 20; n++)
          client.ws.send(JSON.stringify({ type: 'subscribe', requestId: `storm-${n}`, lastEventId: '0' }));
      }
      const answered = () =>
        clients.reduce((sum, client) => sum + client.messages.filter((m) => !isEvent(m)).length, 0);
      // Each subscribe is answered at once; no client gets the history over WebSocket.
      await until(() => answered() >= 1000, 20_000, '1,000 answers').catch(() => undefined);
      await sleep(200);
    } finally {
      done = true;
    }
    const measured = await latencies;
    for (const client of clients) client.ws.terminate();
    // Before the fix every subscribe replayed all ~1,300 events: seconds of event loop per round.
    expectStayedFast(measured);
    const answers = clients.flatMap((client) => client.messages);
    expect(answers.filter(isEvent)).toHaveLength(0);
    expect(answers).toHaveLength(1000);
    for (const answer of answers) {
      expect(answer).toMatchObject({
        type: 'resync_required',
        reason: 'too_far_back',
        requestedEventId: '0',
        catchUp: '/api/v1/events?after=0',
      });
    }
    // The catch-up link serves the history over REST, page by page.
    const history = await restEvents(t, stormer, '0');
    expect(history.at(-1)?.id).toBe(String(newest));
  }, 60_000);

  it('13.2: replays within the window arrive whole while other clients stay fast', async () => {
    const stormer = await httpUser(t);
    const bystander = await httpUser(t);
    const from = newest - 300;
    const expected = (await restEvents(t, stormer, String(from))).map((event) => Number(event.id));
    const clients = await Promise.all(Array.from({ length: 5 }, () => rawClient(t, stormer)));
    let done = false;
    const latencies = probe(t, bystander, () => done);
    try {
      for (const client of clients)
        for (let n = 0; n < 20; n++)
          client.ws.send(
            JSON.stringify({ type: 'subscribe', requestId: `r-${n}`, lastEventId: String(from) }),
          );
      const replayed = () =>
        clients.reduce((sum, client) => sum + client.messages.filter((m) => m.type === 'replayed').length, 0);
      await until(() => replayed() === 100, 60_000, 'every replay');
    } finally {
      done = true;
    }
    const measured = await latencies;
    expectStayedFast(measured);
    for (const client of clients) {
      const bySubscription = new Map<string, number[]>();
      for (const message of client.messages) {
        if (!isEvent(message)) continue;
        for (const id of message.subscriptionIds) {
          const list = bySubscription.get(id) ?? [];
          list.push(Number(message.id));
          bySubscription.set(id, list);
        }
      }
      expect(bySubscription.size).toBe(20);
      for (const received of bySubscription.values()) expect(received).toEqual(expected);
      for (const done of client.messages.filter((m) => m.type === 'replayed'))
        expect(done).toMatchObject({ count: expected.length, lastEventId: String(newest) });
      client.ws.terminate();
    }
  }, 90_000);

  it('13.2: runs the replays of one connection one at a time, in the order subscribed', async () => {
    const user = await httpUser(t);
    const socket: TestSocket = await openSocket(t, user);
    const from = String(newest - 550);
    const count = (await restEvents(t, user, from)).length;
    socket.send({ type: 'subscribe', requestId: 'a', lastEventId: from });
    socket.send({ type: 'subscribe', requestId: 'b', lastEventId: from });
    const a = (await socket.next((m) => m.requestId === 'a')).subscriptionId;
    const b = (await socket.next((m) => m.requestId === 'b')).subscriptionId;
    await socket.collect(2, (m) => m.type === 'replayed', 30_000);
    const transcript = socket.messages
      .filter((m) => isEvent(m) || m.type === 'replayed')
      .map((m) => (m.type === 'replayed' ? `replayed ${m.subscriptionId}` : m.subscriptionIds.join()));
    const expected = [
      ...Array.from({ length: count }, () => a),
      `replayed ${a}`,
      ...Array.from({ length: count }, () => b),
      `replayed ${b}`,
    ];
    expect(transcript).toEqual(expected);
    socket.close();
  }, 60_000);

  it('14.3: a resuming subscribe that meets an unavailable database gets a retryable error, and works once it is back', async () => {
    const socket = await openSocket(t, await httpUser(t));
    const from = String(newest - 5);
    const outage = await databaseOutage(t);
    let restored = false;
    try {
      socket.send({ type: 'subscribe', requestId: 'down', lastEventId: from });
      const answer = await socket.next((m) => m.requestId === 'down', 15_000);
      expect(answer).toMatchObject({ type: 'error', code: 'unavailable' });
      expect(answer.retryAfterMs).toBeGreaterThan(0);
      expect(answer.subscriptionId).toBeUndefined();
      await outage.end();
      restored = true;
      // The retry the error asks for; a pool may need a moment to replace its connections.
      let subscribed: ServerMessage | null = null;
      for (let attempt = 0; attempt < 20 && !subscribed; attempt++) {
        socket.send({ type: 'subscribe', requestId: `retry-${attempt}`, lastEventId: from });
        const retry = await socket.next((m) => m.requestId === `retry-${attempt}`, 15_000);
        if (retry.type === 'subscribed') subscribed = retry;
        else {
          expect(retry).toMatchObject({ type: 'error', code: 'unavailable' });
          await sleep(250);
        }
      }
      expect(subscribed).not.toBeNull();
      const replayed = await socket.next((m) => m.type === 'replayed', 15_000);
      expect(replayed).toMatchObject({ subscriptionId: subscribed?.subscriptionId, count: 5 });
    } finally {
      if (!restored) await outage.end();
      socket.close();
    }
  }, 90_000);
});

/**
 * Makes the app's database unavailable until `end()`: on SQLite the ORM's connection is closed under
 * it (and opened again); on PostgreSQL the database refuses new connections and its sessions are ended.
 */
async function databaseOutage(t: TestApp): Promise<{ end(): Promise<void> }> {
  const orm = t.app.orm;
  if (t.kind === 'sqlite') {
    // The ORM would reopen a connection it closed itself; closing its native handle makes every
    // statement fail as on a lost database, until the ORM is closed and opened again. The read
    // statements' own connection (the event store's reads) is closed too, and the file moved aside
    // so that it cannot be opened again: a lost file, as every connection of the process sees it.
    const path = orm.config.get('dbName') as string;
    const connection = orm.em.getConnection() as unknown as {
      getNativeClient(): Promise<{ close(): void }>;
    };
    (await connection.getNativeClient()).close();
    t.app.database.reads.close();
    renameSync(path, `${path}.away`);
    return {
      async end() {
        renameSync(`${path}.away`, path);
        await orm.close(true);
        await orm.connect();
      },
    };
  }
  const databaseUrl = new URL(t.app.config.databaseUrl as string);
  const name = databaseUrl.pathname.slice(1);
  const serverUrl = new URL(databaseUrl.href);
  serverUrl.pathname = '/postgres';
  const admin = await MikroORM.init({
    driver: PostgreSqlDriver,
    clientUrl: serverUrl.href,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    ensureDatabase: false,
    pool: { min: 0, max: 1 },
  });
  const connection = admin.em.getConnection();
  await connection.execute(`alter database "${name}" allow_connections false`);
  await connection.execute(
    'select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and pid <> pg_backend_pid()',
    [name],
  );
  return {
    async end() {
      try {
        await connection.execute(`alter database "${name}" allow_connections true`);
      } finally {
        await admin.close(true);
      }
    },
  };
}

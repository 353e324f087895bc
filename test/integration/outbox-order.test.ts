// On PostgreSQL, event ids are drawn at insert but become visible at commit, in any order. The relay
// must never hand out id N+1 while N may still commit: it waits for the writers in flight.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxEvent } from '../../src/db/entities/OutboxEvent.ts';
import type { PublishedEvent } from '../../src/events/filter.ts';
import { OUTBOX_LOCK_KEY } from '../../src/events/outbox-lock.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { httpUser } from '../helpers/ledger-fixtures.ts';
import { connect } from '../helpers/ws.ts';

/** Only PostgreSQL commits ids out of order; on SQLite (one writer) there is nothing to hold. */
const onPostgres = DB_KINDS.includes('postgres');
const kind = 'postgres';

/** What every event writer does before its insert (gats_apply_plan): the writers' shared lock, to commit. */
async function takeWriterLock(em: EntityManager): Promise<void> {
  await em.execute('select pg_advisory_xact_lock_shared(?)', [OUTBOX_LOCK_KEY]);
}

function priceEvent(assetId: string) {
  return {
    type: 'priceUpdate' as const,
    occurredAt: new Date(),
    data: { assetId, price: '1', currency: 'USD', source: 'test', observedAt: new Date().toISOString() },
    assetId,
    collectionId: null,
    wallets: [],
    fromWallet: null,
    toWallet: null,
  };
}

/** Writer A draws an id and keeps its transaction open; writer B draws the next id and commits. */
async function outOfOrderCommit(t: TestApp, slow: string, fast: string) {
  let release!: () => void;
  const mayCommit = new Promise<void>((resolve) => {
    release = resolve;
  });
  let inserted!: () => void;
  const hasId = new Promise<void>((resolve) => {
    inserted = resolve;
  });
  const writerA = t.app.orm.em.fork().transactional(async (em) => {
    await takeWriterLock(em as unknown as EntityManager);
    await (em as unknown as EntityManager).insert(OutboxEvent, priceEvent(slow));
    inserted();
    await mayCommit;
  });
  await hasId;
  await t.app.orm.em.fork().transactional(async (em) => {
    await takeWriterLock(em as unknown as EntityManager);
    await (em as unknown as EntityManager).insert(OutboxEvent, priceEvent(fast));
  });
  return {
    async commitA() {
      release();
      await writerA;
    },
  };
}

describe.runIf(onPostgres)('outbox relay order on postgres', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('holds a later id until an earlier one in flight commits, then delivers both in order', async () => {
    const delivered: PublishedEvent[] = [];
    const stop = t.app.events.tail.onEvents((events) => delivered.push(...events));
    let releaseFirst!: () => void;
    const firstMayCommit = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    let firstInserted!: () => void;
    const firstHasId = new Promise<void>((resolve) => {
      firstInserted = resolve;
    });

    // Writer A draws the lower id and keeps its transaction open.
    const writerA = t.app.orm.em.fork().transactional(async (em) => {
      await takeWriterLock(em as unknown as EntityManager);
      await (em as unknown as EntityManager).insert(OutboxEvent, priceEvent('slow-writer'));
      firstInserted();
      await firstMayCommit;
    });
    await firstHasId;
    // Writer B draws the next id and commits at once.
    await t.app.orm.em.fork().transactional(async (em) => {
      await takeWriterLock(em as unknown as EntityManager);
      await (em as unknown as EntityManager).insert(OutboxEvent, priceEvent('fast-writer'));
    });

    t.app.events.tail.nudge();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(delivered.map((event) => event.assetId)).toEqual([]);

    releaseFirst();
    await writerA;
    await t.app.events.tail.flush();
    expect(delivered.map((event) => event.assetId)).toEqual(['slow-writer', 'fast-writer']);
    expect(delivered[1].id).toBe(delivered[0].id + 1);
    stop();
  });

  it('skips an id whose transaction rolled back, after making sure it is final', async () => {
    const delivered: PublishedEvent[] = [];
    const stop = t.app.events.tail.onEvents((events) => delivered.push(...events));
    await t.app.orm.em
      .fork()
      .transactional(async (em) => {
        await takeWriterLock(em as unknown as EntityManager);
        await (em as unknown as EntityManager).insert(OutboxEvent, priceEvent('rolled-back'));
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await t.app.orm.em.fork().transactional(async (em) => {
      await takeWriterLock(em as unknown as EntityManager);
      await (em as unknown as EntityManager).insert(OutboxEvent, priceEvent('after-gap'));
    });
    await t.app.events.tail.flush();
    expect(delivered.map((event) => event.assetId)).toEqual(['after-gap']);
    stop();
  });

  it('never replays a later id over an earlier one still committing (resume over WebSocket)', async () => {
    const user = await httpUser(t);
    await t.app.events.tail.flush();
    const resumeFrom = t.app.events.tail.lastId;
    const { commitA } = await outOfOrderCommit(t, 'replay-slow', 'replay-fast');
    const socket = await connect(`${t.baseUrl.replace('http', 'ws')}/ws`, user.headers);
    socket.send({ type: 'subscribe', events: ['priceUpdate'], lastEventId: String(resumeFrom) });
    await socket.next((message) => message.type === 'subscribed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await commitA();
    const events = await socket.collect(2, (message) => message.type === 'priceUpdate');
    expect(events.map((event) => event.data.assetId)).toEqual(['replay-slow', 'replay-fast']);
    socket.close();
  });

  it('never serves a later id over REST while an earlier one is still committing', async () => {
    const user = await httpUser(t);
    await t.app.events.tail.flush();
    const after = t.app.events.tail.lastId;
    const { commitA } = await outOfOrderCommit(t, 'rest-slow', 'rest-fast');
    const page = t.http('GET', `/api/v1/events?after=${after}&types=priceUpdate`, { headers: user.headers });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await commitA();
    const response = await page;
    expect(response.status).toBe(200);
    expect(response.body.data.map((event: { data: { assetId: string } }) => event.data.assetId)).toEqual([
      'rest-slow',
      'rest-fast',
    ]);
  });
});

// One suite, both stores: webhook delivery state (src/webhooks/store/) through the SQLite and the
// PostgreSQL adapter must take the same leases, move the same cursors, write the same rows and refuse
// the same stale writes (a cursor not where the holder left it, a lease another instance holds, a row
// changed since the attempt read it).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDelivery } from '../../src/db/entities/WebhookDelivery.ts';
import { WebhookSubscription } from '../../src/db/entities/WebhookSubscription.ts';
import { newId } from '../../src/domain/ids.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createDeliveryStore, type DeliveryRow, type DeliveryStore } from '../../src/webhooks/store/index.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { createUser, type LedgerFixture, openLedger } from '../helpers/ledger-fixtures.ts';

const HOUR = 3_600_000;

describe.each(DB_KINDS)('delivery store conformance on %s', (kind) => {
  let fx: LedgerFixture;
  let store: DeliveryStore;
  let owner: string;
  let other: string;

  beforeAll(async () => {
    fx = await openLedger(kind);
    store = createDeliveryStore(fx.orm, createLogger('silent'));
    owner = (await createUser(fx)).userId;
    other = (await createUser(fx)).userId;
  });

  afterAll(async () => {
    await fx?.close();
  });

  /** A subscription row as the API writes it, with the fields a case sets. */
  async function subscription(
    fields: Partial<{
      owner: string;
      cursor: number;
      enabled: boolean;
      deletedAt: Date | null;
      lockedBy: string | null;
      lockedUntil: Date | null;
    }> = {},
  ): Promise<string> {
    const id = newId('sub');
    await fx.orm.em.fork().insert(WebhookSubscription, {
      id,
      owner: fields.owner ?? owner,
      url: 'https://receiver.example/hook',
      eventTypes: ['newTransfer'],
      walletFilter: null,
      assetFilter: null,
      collectionFilter: null,
      secretsSealed: 'sealed',
      previousSecretExpiresAt: null,
      enabled: fields.enabled ?? true,
      status: 'active',
      failingSince: null,
      cursor: fields.cursor ?? 0,
      lockedBy: fields.lockedBy ?? null,
      lockedUntil: fields.lockedUntil ?? null,
      createdAt: new Date(),
      deletedAt: fields.deletedAt ?? null,
    });
    return id;
  }

  function row(sub: string, eventId: number, fields: Partial<DeliveryRow> = {}): DeliveryRow {
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    return {
      id: `${sub}-${eventId}`,
      subscription: sub,
      eventId,
      eventType: 'newTransfer',
      status: 'succeeded',
      attempts: 1,
      firstAttemptAt: at,
      nextAttemptAt: at,
      lastAttemptAt: at,
      lastStatusCode: 204,
      lastError: null,
      deliveredAt: at,
      createdAt: at,
      ...fields,
    };
  }

  async function read(id: string) {
    const sub = await fx.orm.em.fork().findOneOrFail(WebhookSubscription, { id });
    return { cursor: Number(sub.cursor), lockedBy: sub.lockedBy, lockedUntil: sub.lockedUntil };
  }

  async function rowsOf(sub: string) {
    const rows = await fx.orm.em
      .fork()
      .find(WebhookDelivery, { subscription: sub }, { orderBy: { eventId: 'asc' } });
    return rows.map((r) => ({ eventId: Number(r.eventId), status: r.status, attempts: r.attempts }));
  }

  const lease = (instance: string, limit = 10) => ({
    instance,
    until: new Date(Date.now() + HOUR),
    limit,
    admit: async (who: string) => who,
  });

  describe('leases', () => {
    it('takes the free, enabled ones up to the limit, and a lapsed lease, each with its account', async () => {
      const free = await subscription();
      const lapsed = await subscription({ lockedBy: 'gone', lockedUntil: new Date(Date.now() - 1000) });
      const held = await subscription({ lockedBy: 'other', lockedUntil: new Date(Date.now() + HOUR) });
      const disabled = await subscription({ enabled: false });
      const deleted = await subscription({ deletedAt: new Date() });
      const me = randomUUID();
      const taken = await store.claim([free, lapsed, held, disabled, deleted], lease(me));
      expect([...taken.keys()].sort()).toEqual([free, lapsed].sort());
      expect(taken.get(free)).toBe(owner);
      expect((await read(free)).lockedBy).toBe(me);
      expect((await read(lapsed)).lockedBy).toBe(me);
      expect((await read(held)).lockedBy).toBe('other');
      expect((await read(disabled)).lockedBy).toBeNull();
      const limited = await store.claim(
        [await subscription(), await subscription(), await subscription()],
        lease(randomUUID(), 2),
      );
      expect(limited.size).toBe(2);
    });

    it('leaves the ones `admit` refuses, and records the account it names', async () => {
      const mine = await subscription();
      const theirs = await subscription({ owner: other });
      const taken = await store.claim([mine, theirs], {
        ...lease(randomUUID()),
        admit: async (who) => (who === other ? null : 'account-1'),
      });
      expect([...taken]).toEqual([[mine, 'account-1']]);
      expect((await read(theirs)).lockedBy).toBeNull();
    });

    it('gives each subscription to one of two instances claiming at once', async () => {
      const candidates = await Promise.all(Array.from({ length: 12 }, () => subscription()));
      const [a, b] = [randomUUID(), randomUUID()];
      const [first, second] = await Promise.all([
        store.claim(candidates, lease(a, 12)),
        store.claim(candidates, lease(b, 12)),
      ]);
      for (const id of first.keys()) expect(second.has(id)).toBe(false);
      expect(first.size + second.size).toBe(12);
      for (const id of candidates) expect([a, b]).toContain((await read(id)).lockedBy);
    });

    it('lists, renews and releases only what the instance holds', async () => {
      const me = randomUUID();
      const mine = await subscription();
      const theirs = await subscription({ lockedBy: 'other', lockedUntil: new Date(Date.now() + HOUR) });
      await store.claim([mine], lease(me));
      expect((await store.leased(me)).map((sub) => sub.id)).toEqual([mine]);
      expect((await store.leased(me, [mine, theirs])).map((sub) => sub.id)).toEqual([mine]);
      const until = new Date(Date.now() + 3 * HOUR);
      await store.renew(me, until);
      expect((await read(mine)).lockedUntil?.getTime()).toBe(until.getTime());
      await store.release(theirs, me);
      expect((await read(theirs)).lockedBy).toBe('other');
      await store.release(mine, me);
      expect(await read(mine)).toMatchObject({ lockedBy: null, lockedUntil: null });
      expect(await store.leased(me)).toEqual([]);
    });
  });

  describe('the scheduler reads', () => {
    it('finds the unleased subscriptions behind the relay, their owners, and the retries due or later', async () => {
      const now = new Date();
      const lastEventId = 1_000_000;
      const behind = await subscription({ cursor: 5 });
      const upToDate = await subscription({ cursor: lastEventId });
      const leased = await subscription({
        cursor: 5,
        lockedBy: 'x',
        lockedUntil: new Date(Date.now() + HOUR),
      });
      const theirs = await subscription({ cursor: 5, owner: other });
      const found = await store.behind({ lastEventId, now, limit: 1000, exceptOwners: [other] });
      expect(found).toContain(behind);
      expect(found).not.toContain(upToDate);
      expect(found).not.toContain(leased);
      expect(found).not.toContain(theirs);
      expect(await store.behind({ lastEventId, now, limit: 1000, exceptOwners: [] })).toContain(theirs);
      expect(await store.ownersBehind([other], lastEventId, now)).toContain(other);
      expect(await store.ownersBehind([], lastEventId, now)).toEqual([]);

      const due = await subscription();
      const later = await subscription();
      const me = randomUUID();
      await store.claim([due, later], lease(me));
      await store.materialize(due, me, { from: 0, to: 1 }, [event(1)], new Date(now.getTime() - 1000));
      await store.materialize(later, me, { from: 0, to: 1 }, [event(1)], new Date(now.getTime() + HOUR));
      expect((await store.due(now, 500)).has(due)).toBe(true);
      expect((await store.due(now, 500)).has(later)).toBe(false);
      expect([...(await store.retryLater([due, later, behind], now))]).toEqual([later]);
      expect([...(await store.withPending([due, later, behind]))].sort()).toEqual([due, later].sort());
      expect(await store.retryLater([], now)).toEqual(new Set());
      expect(await store.withPending([])).toEqual(new Set());
      expect(await store.anyEnabled()).toBe(true);
    });
  });

  function event(id: number) {
    return { id, type: 'newTransfer' as const, occurredAt: new Date(1_700_000_000_000 + id) };
  }

  describe('the fast path', () => {
    it("moves each cursor from where its holder left it, with that subscription's rows only", async () => {
      const me = randomUUID();
      const [a, b, stale, foreign] = await Promise.all([
        subscription(),
        subscription(),
        subscription({ cursor: 7 }),
        subscription({ lockedBy: 'other', lockedUntil: new Date(Date.now() + HOUR) }),
      ]);
      await store.claim([a, b, stale], lease(me));
      const moved = await store.recordSuccesses(
        me,
        [
          { id: a, from: 0, to: 3 },
          { id: b, from: 0, to: 2 },
          { id: stale, from: 0, to: 9 }, // a replay moved it: not where this instance left it
          { id: foreign, from: 0, to: 1 }, // another instance's
        ],
        [row(a, 1), row(a, 3), row(b, 2), row(stale, 9), row(foreign, 1)],
      );
      expect([...moved].sort()).toEqual([a, b].sort());
      expect((await read(a)).cursor).toBe(3);
      expect((await read(b)).cursor).toBe(2);
      expect((await read(stale)).cursor).toBe(7);
      expect((await read(foreign)).cursor).toBe(0);
      expect(await rowsOf(a)).toEqual([
        { eventId: 1, status: 'succeeded', attempts: 1 },
        { eventId: 3, status: 'succeeded', attempts: 1 },
      ]);
      expect(await rowsOf(stale)).toEqual([]);
      expect(await rowsOf(foreign)).toEqual([]);
      expect(await store.recordSuccesses(me, [], [])).toEqual(new Set());
    });

    it('writes a large batch whole, keeps a row already recorded as it is, and reads back what it wrote', async () => {
      const me = randomUUID();
      const subs = await Promise.all(Array.from({ length: 5 }, () => subscription()));
      await store.claim(subs, lease(me));
      // An event recorded before (a redelivery after a crash): the batch's row of it is left out.
      await store.recordFirstFailure(
        me,
        { id: subs[0], from: 0, to: 1 },
        row(subs[0], 1, { status: 'pending', attempts: 0 }),
      );
      const rows = subs.flatMap((sub, i) =>
        Array.from({ length: 130 }, (_, e) => row(sub, e + 1 + i * 1000)),
      );
      const moved = await store.recordSuccesses(
        me,
        subs.map((sub, i) => ({ id: sub, from: i === 0 ? 1 : 0, to: 130 + i * 1000 })),
        rows,
      );
      expect(moved.size).toBe(5);
      expect((await rowsOf(subs[0])).length).toBe(130);
      expect((await rowsOf(subs[0]))[0]).toEqual({ eventId: 1, status: 'pending', attempts: 0 });
      for (const sub of subs.slice(1)) expect((await rowsOf(sub)).length).toBe(130);
      const written = await store.delivery(`${subs[1]}-1001`);
      expect(written).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        lastStatusCode: 204,
        lastError: null,
      });
      expect(written?.deliveredAt?.getTime()).toBe(rows[130].deliveredAt?.getTime());
      expect(Number(written?.eventId)).toBe(1001);
    });

    it('records a first failure with its cursor only where the holder left it', async () => {
      const me = randomUUID();
      const sub = await subscription({ cursor: 4 });
      await store.claim([sub], lease(me));
      const pending = row(sub, 6, { status: 'pending', attempts: 0, deliveredAt: null });
      expect(await store.recordFirstFailure(me, { id: sub, from: 3, to: 6 }, pending)).toBe(false);
      expect(await store.recordFirstFailure('other', { id: sub, from: 4, to: 6 }, pending)).toBe(false);
      expect(await rowsOf(sub)).toEqual([]);
      expect(await store.recordFirstFailure(me, { id: sub, from: 4, to: 6 }, pending)).toBe(true);
      expect((await read(sub)).cursor).toBe(6);
      expect((await store.nextPending(sub))?.id).toBe(pending.id);
    });
  });

  describe('the slow path', () => {
    it('materializes pending rows past the cursor, once each, and only from where it read the cursor', async () => {
      const me = randomUUID();
      const sub = await subscription({ cursor: 10 });
      await store.claim([sub], lease(me));
      const now = new Date(Math.floor(Date.now() / 1000) * 1000);
      await store.materialize(sub, me, { from: 10, to: 20 }, [event(12), event(15)], now);
      expect((await read(sub)).cursor).toBe(20);
      // A replay moved the cursor back to 10 and this holder read it: the rows of 12 stand, 15 is not doubled.
      await fx.orm.em.fork().nativeUpdate(WebhookSubscription, { id: sub }, { cursor: 10 });
      await store.materialize(sub, me, { from: 10, to: 20 }, [event(12), event(15), event(18)], now);
      expect(await rowsOf(sub)).toEqual([
        { eventId: 12, status: 'pending', attempts: 0 },
        { eventId: 15, status: 'pending', attempts: 0 },
        { eventId: 18, status: 'pending', attempts: 0 },
      ]);
      // Stale (the cursor is at 20, not 10), or not the holder: nothing moves, nothing is written.
      await store.materialize(sub, me, { from: 10, to: 30 }, [event(25)], now);
      await store.materialize(sub, 'other', { from: 20, to: 30 }, [event(25)], now);
      expect((await read(sub)).cursor).toBe(20);
      expect((await rowsOf(sub)).length).toBe(3);
      const next = await store.nextPending(sub);
      expect(Number(next?.eventId)).toBe(12);
      expect(next?.nextAttemptAt.getTime()).toBe(now.getTime());
    });

    it("records an attempt only on the row as the attempt read it, and sets the subscription's status", async () => {
      const me = randomUUID();
      const sub = await subscription();
      await store.claim([sub], lease(me));
      const now = new Date(Math.floor(Date.now() / 1000) * 1000);
      await store.materialize(sub, me, { from: 0, to: 2 }, [event(1), event(2)], now);
      const first = await store.nextPending(sub);
      if (!first) throw new Error('no pending delivery');
      const later = new Date(now.getTime() + 60_000);
      expect(
        await store.recordAttempt(
          { id: first.id, nextAttemptAt: first.nextAttemptAt },
          {
            attempts: 1,
            firstAttemptAt: now,
            lastAttemptAt: now,
            lastStatusCode: 500,
            lastError: 'boom',
            nextAttemptAt: later,
          },
        ),
      ).toBe(true);
      // Read before that write: a stale attempt does not overwrite it.
      expect(
        await store.recordAttempt(
          { id: first.id, nextAttemptAt: first.nextAttemptAt },
          { status: 'succeeded', attempts: 2 },
        ),
      ).toBe(false);
      expect(await store.delivery(first.id)).toMatchObject({
        status: 'pending',
        attempts: 1,
        lastError: 'boom',
      });
      expect(await store.recordAttempt({ id: first.id }, { status: 'failed', lastError: 'gone' })).toBe(true);
      expect(Number((await store.nextPending(sub))?.eventId)).toBe(2);

      await store.setStatus(sub, { status: 'failing', failingSince: now });
      expect(await store.subscription(sub)).toMatchObject({ status: 'failing', enabled: true });
      await store.setStatus(sub, { status: 'disabled', enabled: false, failingSince: now });
      expect(await store.subscription(sub)).toMatchObject({ status: 'disabled', enabled: false });
      expect((await store.subscription(sub))?.failingSince?.getTime()).toBe(now.getTime());
      await store.setStatus(sub, { status: 'active', failingSince: null });
      expect(await store.subscription(sub)).toMatchObject({ status: 'active', failingSince: null });
      expect(await store.subscription('sub_missing')).toBeNull();
      expect(await store.delivery('missing')).toBeNull();
    });
  });

  it('counts the backlog: deliveries pending and failed, subscriptions by status, events behind', async () => {
    const before = await store.backlog(1_000_000);
    const me = randomUUID();
    const sub = await subscription({ cursor: 999_990 });
    await store.claim([sub], lease(me));
    await store.materialize(
      sub,
      me,
      { from: 999_990, to: 999_995 },
      [event(999_991), event(999_992)],
      new Date(),
    );
    const first = await store.nextPending(sub);
    if (!first) throw new Error('no pending delivery');
    await store.recordAttempt({ id: first.id }, { status: 'failed' });
    const after = await store.backlog(1_000_000);
    expect(after.pending - before.pending).toBe(1);
    expect(after.failed - before.failed).toBe(1);
    expect((after.subscriptions.active ?? 0) - (before.subscriptions.active ?? 0)).toBe(1);
    // The new subscription is 5 behind; the others' shares are what they were.
    expect(after.undelivered - before.undelivered).toBe(5);
  });
});

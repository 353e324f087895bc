// The webhook dispatcher: turns committed outbox events into deliveries and sends them, at least
// once and in event-id order per subscription. All of its state is in the database:
// - a subscription is leased (`lockedBy`, `lockedUntil`, taken by a conditional UPDATE) by one
//   instance at a time, which alone advances its cursor and sends its deliveries; a crashed
//   instance's lease runs out and another instance (or the restarted one) carries on from the rows;
// - the cursor moves (guarded by its previous value) in the same transaction that inserts the
//   deliveries of the events it passes, and never past the relay's final position (tail.lastId);
// - a delivery is marked succeeded only after a 2xx, so a crash between the request and that write
//   sends it again (receivers deduplicate on `webhook-id`, the delivery's id).
// One request per subscription at a time (order) and WEBHOOK_CONCURRENCY per instance, each within
// WEBHOOK_TIMEOUT_MS: a slow or dead endpoint holds up only its own subscription. The dispatcher
// only listens to the relay (a nudge), so WebSocket fan-out never waits for it.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import { OutboxEvent } from '../db/entities/OutboxEvent.ts';
import { WebhookDelivery } from '../db/entities/WebhookDelivery.ts';
import { WebhookSubscription } from '../db/entities/WebhookSubscription.ts';
import type { Orm } from '../db/orm.ts';
import { ulid } from '../domain/ids.ts';
import { filterCondition } from '../events/filter.ts';
import { toEnvelope } from '../events/store.ts';
import type { Logger } from '../observability/logger.ts';
import { sendWebhook } from './sender.ts';
import { subscriptionFilter, type WebhookService } from './subscriptions.ts';
import type { TargetPolicy } from './targets.ts';

/** How often the dispatcher looks for work without being nudged (retries coming due, other instances' leases). */
const POLL_MS = 250;
/** Events turned into deliveries per step. */
const MATERIALIZE_BATCH = 200;
/** Deliveries sent per lease before the subscription is let go (so others get their turn). */
const DELIVERIES_PER_LEASE = 100;
const MAX_RETRY_DELAY_MS = 60 * 60 * 1000;

export interface DispatcherOptions extends TargetPolicy {
  timeoutMs: number;
  concurrency: number;
  retryBaseMs: number;
  retryWindowSeconds: number;
  disableAfterSeconds: number;
}

export interface Dispatcher {
  /** There may be work: look now. */
  wake(): void;
  stop(): Promise<void>;
}

/** Exponential backoff with jitter: between half and all of base·2^(attempt-1), at most an hour. */
export function retryDelayMs(base: number, attempts: number): number {
  const ceiling = Math.min(base * 2 ** Math.min(attempts - 1, 30), MAX_RETRY_DELAY_MS);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export function createDispatcher(deps: {
  orm: Orm;
  service: WebhookService;
  /** The relay's final position: no delivery is made of an id beyond it. */
  lastEventId: () => number;
  options: DispatcherOptions;
  logger: Logger;
  userAgent: string;
}): Dispatcher {
  const { orm, options, logger } = deps;
  const instance = randomUUID();
  // Longer than one attempt can take, renewed before each attempt.
  const leaseMs = 2 * options.timeoutMs + 2000;
  const active = new Set<string>();
  const running = new Set<Promise<void>>();
  let scheduled = false;
  let ticking = false;
  let stopped = false;

  const poll = setInterval(() => wake(), POLL_MS);
  poll.unref();

  function wake(): void {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void tick().catch((error: unknown) => logger.warn({ err: error }, 'webhook dispatch failed'));
    });
  }

  const em = () => orm.em.fork() as unknown as EntityManager;
  const leaseFree = (now: Date) => ({ $or: [{ lockedUntil: null }, { lockedUntil: { $lt: now } }] });

  async function tick(): Promise<void> {
    if (ticking || stopped) return;
    ticking = true;
    try {
      const free = options.concurrency - active.size;
      if (free <= 0) return;
      const now = new Date();
      const reader = em();
      const behind = await reader.find(
        WebhookSubscription,
        { enabled: true, deletedAt: null, cursor: { $lt: deps.lastEventId() }, ...leaseFree(now) },
        { fields: ['id'], limit: free * 2 },
      );
      const due = await reader.find(
        WebhookDelivery,
        { status: 'pending', nextAttemptAt: { $lte: now } },
        { fields: ['subscription'], limit: 500 },
      );
      const candidates = [
        ...new Set([...behind.map((sub) => sub.id), ...due.map((delivery) => delivery.subscription.id)]),
      ].filter((id) => !active.has(id));
      for (const id of candidates) {
        if (active.size >= options.concurrency || stopped) break;
        const claimed = await em().nativeUpdate(
          WebhookSubscription,
          { id, enabled: true, deletedAt: null, ...leaseFree(new Date()) },
          { lockedBy: instance, lockedUntil: new Date(Date.now() + leaseMs) },
        );
        if (claimed !== 1) continue;
        active.add(id);
        const work = serve(id)
          .catch((error: unknown) => logger.warn({ err: error, webhook: id }, 'webhook delivery failed'))
          .finally(async () => {
            await em()
              .nativeUpdate(
                WebhookSubscription,
                { id, lockedBy: instance },
                { lockedBy: null, lockedUntil: null },
              )
              .catch(() => undefined);
            active.delete(id);
            running.delete(work);
            wake();
          });
        running.add(work);
      }
    } finally {
      ticking = false;
    }
  }

  /** Delivers what is due for one leased subscription, in order, until it runs dry or fails. */
  async function serve(id: string): Promise<void> {
    for (let sent = 0; sent < DELIVERIES_PER_LEASE && !stopped; sent++) {
      const store = em();
      const sub = await store.findOne(WebhookSubscription, { id, lockedBy: instance });
      if (!sub || !sub.enabled || sub.deletedAt) return;
      await store.nativeUpdate(
        WebhookSubscription,
        { id, lockedBy: instance },
        { lockedUntil: new Date(Date.now() + leaseMs) },
      );
      await materialize(store, sub);
      const next = await store.findOne(
        WebhookDelivery,
        { subscription: id, status: 'pending' },
        { orderBy: { eventId: 'asc' } },
      );
      // Order: a later event waits while an earlier one is waiting for its retry.
      if (!next || next.nextAttemptAt.getTime() > Date.now()) return;
      if (!(await attempt(store, sub, next))) return;
    }
  }

  /** Adds the deliveries of the events past the cursor that the subscription wants, moving the cursor. */
  async function materialize(store: EntityManager, sub: WebhookSubscription): Promise<void> {
    const last = deps.lastEventId();
    if (sub.cursor >= last) return;
    const events = await store.find(
      OutboxEvent,
      { ...filterCondition(subscriptionFilter(sub)), id: { $gt: sub.cursor, $lte: last } },
      { fields: ['id', 'type'], orderBy: { id: 'asc' }, limit: MATERIALIZE_BATCH },
    );
    const cursor = events.length === MATERIALIZE_BATCH ? Number(events[events.length - 1].id) : last;
    await store.transactional(async (tx) => {
      // Only the lease holder moves the cursor, and only from where it read it (a replay may move it back).
      const moved = await tx.nativeUpdate(
        WebhookSubscription,
        { id: sub.id, lockedBy: instance, cursor: sub.cursor },
        { cursor },
      );
      if (moved !== 1 || events.length === 0) return;
      const ids = events.map((event) => Number(event.id));
      const existing = new Set(
        (
          await tx.find(
            WebhookDelivery,
            { subscription: sub.id, eventId: { $in: ids } },
            { fields: ['eventId'] },
          )
        ).map((row) => Number(row.eventId)),
      );
      const now = new Date();
      const rows = events
        .filter((event) => !existing.has(Number(event.id)))
        .map((event) => ({
          id: `whd_${ulid()}`,
          subscription: sub.id,
          eventId: Number(event.id),
          eventType: event.type,
          status: 'pending',
          attempts: 0,
          firstAttemptAt: null,
          nextAttemptAt: now,
          lastAttemptAt: null,
          lastStatusCode: null,
          lastError: null,
          deliveredAt: null,
          createdAt: now,
        }));
      if (rows.length > 0) await tx.insertMany(WebhookDelivery, rows);
    });
    sub.cursor = cursor;
  }

  /** Sends one delivery and records the outcome; whether the subscription may go on. */
  async function attempt(store: EntityManager, sub: WebhookSubscription, delivery: WebhookDelivery) {
    const event = await store.findOne(OutboxEvent, { id: delivery.eventId });
    const startedAt = new Date();
    const firstAttemptAt = delivery.firstAttemptAt ?? startedAt;
    const attempts = delivery.attempts + 1;
    if (!event) {
      await store.nativeUpdate(
        WebhookDelivery,
        { id: delivery.id },
        { status: 'failed', lastError: 'the event is no longer retained', lastAttemptAt: startedAt },
      );
      return true;
    }
    const outcome = await sendWebhook(
      sub.url,
      { id: delivery.id, body: JSON.stringify(toEnvelope(event)), secrets: deps.service.signingSecrets(sub) },
      { ...options, userAgent: deps.userAgent },
    );
    const now = new Date();
    const recorded = { attempts, firstAttemptAt, lastAttemptAt: now, lastStatusCode: outcome.statusCode };
    if (outcome.ok) {
      await store.nativeUpdate(
        WebhookDelivery,
        { id: delivery.id },
        { ...recorded, status: 'succeeded', lastError: null, deliveredAt: now },
      );
      if (sub.status !== 'active' || sub.failingSince)
        await store.nativeUpdate(
          WebhookSubscription,
          { id: sub.id },
          { status: 'active', failingSince: null },
        );
      return true;
    }
    const giveUp = now.getTime() - firstAttemptAt.getTime() >= options.retryWindowSeconds * 1000;
    await store.nativeUpdate(
      WebhookDelivery,
      { id: delivery.id },
      {
        ...recorded,
        lastError: outcome.error?.slice(0, 250) ?? null,
        status: giveUp ? 'failed' : 'pending',
        nextAttemptAt: new Date(now.getTime() + retryDelayMs(options.retryBaseMs, attempts)),
      },
    );
    if (giveUp) {
      const failingSince = sub.failingSince ?? now;
      const disable = now.getTime() - failingSince.getTime() >= options.disableAfterSeconds * 1000;
      await store.nativeUpdate(
        WebhookSubscription,
        { id: sub.id },
        disable ? { status: 'disabled', enabled: false, failingSince } : { status: 'failing', failingSince },
      );
      logger.warn({ webhook: sub.id, eventId: String(delivery.eventId) }, 'webhook delivery given up');
      // The next event goes ahead: one dead message does not block the rest for ever.
      return !disable;
    }
    return false;
  }

  return {
    wake,
    async stop() {
      stopped = true;
      clearInterval(poll);
      // In-flight requests end within their timeout; unfinished deliveries stay pending (leases lapse).
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((resolve) => setTimeout(resolve, options.timeoutMs).unref()),
      ]);
    },
  };
}

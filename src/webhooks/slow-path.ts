// The slow path of webhook delivery: a subscription with a delivery pending goes through its rows one
// at a time. Its events past the cursor become pending rows first (materialized from the outbox), then
// each attempt is recorded on its row, with retries (exponential backoff with jitter), give-ups after
// the retry window, and the subscription failing, disabled, or active again. Once no row is pending
// the dispatcher (./dispatcher.ts) puts the subscription back on the fast path, from its cursor.
import type { WebhookDelivery } from '../db/entities/WebhookDelivery.ts';
import type { WebhookSubscription } from '../db/entities/WebhookSubscription.ts';
import { type EventStore, toEnvelope } from '../events/store.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { type DispatcherOptions, type Held, MATERIALIZE_BATCH } from './held.ts';
import type { SendThread } from './send-thread.ts';
import type { Outcome } from './sender.ts';
import type { DeliveryStore } from './store/index.ts';
import { subscriptionFilter } from './subscriptions.ts';

const MAX_RETRY_DELAY_MS = 60 * 60 * 1000;

/** Exponential backoff with jitter: between half and all of base·2^(attempt-1), at most an hour. */
export function retryDelayMs(base: number, attempts: number): number {
  const ceiling = Math.min(base * 2 ** Math.min(attempts - 1, 30), MAX_RETRY_DELAY_MS);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export type AttemptOutcome = 'succeeded' | 'failed' | 'given_up';

export interface SlowPath {
  /** One step of the slow path; whether the subscription goes on. */
  step(h: Held): Promise<boolean>;
  /** Records an attempt's outcome on its row (and the subscription's status); whether it may go on. */
  record(
    sub: WebhookSubscription,
    delivery: WebhookDelivery,
    outcome: Outcome,
    startedAt: Date,
  ): Promise<boolean>;
}

export function createSlowPath(deps: {
  store: DeliveryStore;
  /** The outbox: the events past a cursor, and each delivery's event. */
  events: EventStore;
  sender: SendThread;
  /** This instance (the lease holder's name). */
  instance: string;
  lastEventId: () => number;
  /** The relay's newest price update (src/events/reads.ts: a wallet filter's price updates stop there). */
  newestPriceUpdate: () => number;
  options: DispatcherOptions;
  sendOptions: Parameters<SendThread['send']>[2];
  logger: Logger;
  metrics: WebhookMetrics;
  /** Counts an attempt's outcome and duration. */
  observe: (outcome: AttemptOutcome, startedAt: Date, now: Date) => void;
  /** Reads a held subscription's row again (its signing secrets). */
  track: (sub: WebhookSubscription, h: Held) => void;
}): SlowPath {
  const {
    store,
    events: outbox,
    sender,
    instance,
    lastEventId,
    newestPriceUpdate,
    options,
    sendOptions,
    logger,
    metrics,
    observe,
    track,
  } = deps;

  async function step(h: Held): Promise<boolean> {
    const [sub] = await store.leased(instance, [h.id]);
    if (!sub?.enabled || sub.deletedAt) {
      h.lost = true;
      return false;
    }
    track(sub, h);
    await materialize(sub);
    const next = await store.nextPending(h.id);
    if (!next) {
      // Nothing pending: back to the fast path, from the cursor.
      h.mode = 'fast';
      h.wantSlow = false;
      h.confirmed = h.flushed = Number(sub.cursor);
      return true;
    }
    // Order: a later event waits while an earlier one is waiting for its retry.
    if (next.nextAttemptAt.getTime() > Date.now()) return false;
    h.lastWork = Date.now();
    h.sent++;
    return attempt(sub, h, next);
  }

  /** Adds the deliveries of the events past the cursor that the subscription wants, moving the cursor. */
  async function materialize(sub: WebhookSubscription): Promise<void> {
    const last = lastEventId();
    if (sub.cursor >= last) return;
    const events = await outbox.after(
      sub.cursor,
      MATERIALIZE_BATCH,
      subscriptionFilter(sub),
      last,
      newestPriceUpdate(),
    );
    const cursor = events.length === MATERIALIZE_BATCH ? Number(events[events.length - 1].id) : last;
    await store.materialize(
      sub.id,
      instance,
      { from: sub.cursor, to: cursor },
      events.map((event) => ({ id: Number(event.id), type: event.type, occurredAt: event.occurredAt })),
      new Date(),
    );
    sub.cursor = cursor;
  }

  /** Sends one delivery and records the outcome; whether the subscription may go on. */
  async function attempt(sub: WebhookSubscription, h: Held, delivery: WebhookDelivery) {
    const eventId = Number(delivery.eventId);
    const [event] = await outbox.after(eventId - 1, 1, undefined, eventId);
    const startedAt = new Date();
    if (!event) {
      await store.recordAttempt(
        { id: delivery.id },
        { status: 'failed', lastError: 'the event is no longer retained', lastAttemptAt: startedAt },
      );
      return true;
    }
    const outcome = await sender.send(
      sub.url,
      { id: delivery.id, body: JSON.stringify(toEnvelope(event)), secrets: h.secrets },
      sendOptions,
    );
    if (outcome.ok) metrics.lagSeconds.observe(Math.max(0, Date.now() - event.occurredAt.getTime()) / 1000);
    return record(sub, delivery, outcome, startedAt);
  }

  async function record(
    sub: WebhookSubscription,
    delivery: WebhookDelivery,
    outcome: Outcome,
    startedAt: Date,
  ): Promise<boolean> {
    const firstAttemptAt = delivery.firstAttemptAt ?? startedAt;
    const attempts = delivery.attempts + 1;
    const now = new Date();
    const recorded = { attempts, firstAttemptAt, lastAttemptAt: now, lastStatusCode: outcome.statusCode };
    // Only the row as this attempt read it: a redelivery or replay asked for meanwhile (a new
    // nextAttemptAt) stands, and the delivery goes again.
    const unchanged = { id: delivery.id, nextAttemptAt: delivery.nextAttemptAt };
    if (outcome.ok) {
      observe('succeeded', startedAt, now);
      await store.recordAttempt(unchanged, {
        ...recorded,
        status: 'succeeded',
        lastError: null,
        deliveredAt: now,
      });
      if (sub.status !== 'active' || sub.failingSince)
        await store.setStatus(sub.id, { status: 'active', failingSince: null });
      return true;
    }
    const giveUp = now.getTime() - firstAttemptAt.getTime() >= options.retryWindowSeconds * 1000;
    observe(giveUp ? 'given_up' : 'failed', startedAt, now);
    const written = await store.recordAttempt(unchanged, {
      ...recorded,
      lastError: outcome.error?.slice(0, 250) ?? null,
      status: giveUp ? 'failed' : 'pending',
      nextAttemptAt: new Date(now.getTime() + retryDelayMs(options.retryBaseMs, attempts)),
    });
    if (!written) return true;
    if (giveUp) {
      const failingSince = sub.failingSince ?? now;
      const disable = now.getTime() - failingSince.getTime() >= options.disableAfterSeconds * 1000;
      await store.setStatus(
        sub.id,
        disable ? { status: 'disabled', enabled: false, failingSince } : { status: 'failing', failingSince },
      );
      sub.status = disable ? 'disabled' : 'failing';
      sub.failingSince = failingSince;
      logger.warn({ webhook: sub.id, eventId: String(delivery.eventId) }, 'webhook delivery given up');
      // The next event goes ahead: one dead message does not block the rest for ever.
      return !disable;
    }
    return false;
  }

  return { step, record };
}

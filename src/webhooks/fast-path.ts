// The fast path of webhook delivery, for a subscription with no pending row: its events come from
// the relay's recent events kept in memory (./recent-events.ts; the outbox is read only to catch up
// from further back), are sent in id order, a series at a time, through the sender thread, and the
// successes are written together, every 200 ms (the dispatcher's FLUSH_MS), for all subscriptions
// at once (one write of the delivery rows and the cursors: the store's recordSuccesses) instead of
// several statements per delivery. The first failure writes its pending row at once and hands the subscription to the slow
// path (./slow-path.ts). The streams (./streams.ts) report their successes here too.
import type { EventStore } from '../events/store.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { clock } from './clock.ts';
import { deliveryId } from './delivery-id.ts';
import { type DeliveryMeters, fromRow, type Held, type LiveEvent, MATERIALIZE_BATCH } from './held.ts';
import type { RecentEvents } from './recent-events.ts';
import type { SendThread } from './send-thread.ts';
import type { Outcome } from './sender.ts';
import type { SlowPath } from './slow-path.ts';
import type { DeliveryRow, DeliveryStore } from './store/index.ts';

export interface FastPath {
  /** The next events the subscription wants after `confirmed`, and how far that answer reaches. */
  next(h: Held): Promise<{ events: LiveEvent[]; upTo: number }>;
  /** Sends events in order (successes written later, the first failure at once); whether all were delivered. */
  send(h: Held, events: LiveEvent[]): Promise<boolean>;
  /** A fast-path failure: the successes before it are written, then its row, and the slow path takes over. */
  failed(h: Held, event: LiveEvent, row: DeliveryRow, outcome: Outcome, startedAt: Date): Promise<void>;
  /** The row of a delivery about to be retried (its first attempt failed on the fast path). */
  pendingRow(h: Held, id: string, event: LiveEvent, startedAt: Date): DeliveryRow;
  /** A success to write with the next flush (a stream's). */
  succeeded(row: DeliveryRow): void;
  /** Whether anything waits to be written (successes, or cursors moved past events not wanted). */
  unwritten(): boolean;
  /** Writes the successes so far and the cursors of the fast path, in one transaction. */
  flush(): Promise<void>;
}

export function createFastPath(deps: {
  store: DeliveryStore;
  /** The outbox, read to catch up from further back than the recent events. */
  events: EventStore;
  sender: SendThread;
  /** This instance (the lease holder's name). */
  instance: string;
  lastEventId: () => number;
  /** The relay's newest price update (src/events/reads.ts: a wallet filter's price updates stop there). */
  newestPriceUpdate: () => number;
  sendOptions: Parameters<SendThread['series']>[3];
  logger: Logger;
  metrics: WebhookMetrics;
  meters: DeliveryMeters;
  /** The subscriptions this instance holds (the dispatcher's). */
  held: ReadonlyMap<string, Held>;
  recent: RecentEvents;
  slow: SlowPath;
  /** Runs database work that must not interleave with the dispatcher's other such work. */
  inSeries: <T>(work: () => Promise<T>) => Promise<T>;
  /** The successes could not be written: the streams whose successes were lost must stop. */
  writeFailed: () => void;
}): FastPath {
  const {
    store,
    events: outbox,
    sender,
    instance,
    lastEventId,
    newestPriceUpdate,
    sendOptions,
    logger,
    metrics,
    meters,
    held,
    recent,
    slow,
    inSeries,
    writeFailed,
  } = deps;
  /** Successes not yet written. */
  let successes: DeliveryRow[] = [];

  /** The next events the subscription wants after `confirmed`, and how far that answer reaches. */
  async function next(h: Held): Promise<{ events: LiveEvent[]; upTo: number }> {
    if (recent.covers(h.confirmed) && recent.lastId !== undefined)
      return recent.matching(h.confirmed, h.filter, MATERIALIZE_BATCH);
    const last = lastEventId();
    if (h.confirmed >= last) return { events: [], upTo: h.confirmed };
    const rows = await outbox.after(h.confirmed, MATERIALIZE_BATCH, h.filter, last, newestPriceUpdate());
    const events = rows.map(fromRow);
    return { events, upTo: events.length === MATERIALIZE_BATCH ? events[events.length - 1].id : last };
  }

  /**
   * Sends events on the fast path, one after the other, handed to the sender thread together:
   * successes are written later with others; the first failure at once (and the rest wait).
   * Whether every one was delivered.
   */
  async function send(h: Held, events: LiveEvent[]): Promise<boolean> {
    const stage = meters.stages;
    const ids = events.map((event) => deliveryId(h.id, event.id, event.occurredAt));
    const handedAt = clock();
    for (const event of events) {
      stage[event.source].observe(Math.max(0, event.heldAt - event.occurredAt) / 1000);
      stage.queue.observe(Math.max(0, handedAt - event.heldAt) / 1000);
    }
    let delivered = 0;
    /** The failed one, if any (the last answer). */
    const failures: {
      event: LiveEvent;
      row: DeliveryRow;
      outcome: Outcome;
      startedAt: Date;
    }[] = [];
    await sender.series(
      h.url,
      events.map((event, i) => ({ id: ids[i], body: event.json })),
      h.secrets,
      sendOptions,
      (answer) => {
        // To the thread and behind the series' earlier requests; the request; the answer back.
        stage.handoff.observe(Math.max(0, answer.startedAt - answer.postedAt) / 1000);
        stage.request.observe(Math.max(0, answer.doneAt - answer.startedAt) / 1000);
        stage.return.observe(Math.max(0, answer.answeredAt - answer.doneAt) / 1000);
        const i = delivered;
        const event = events[i];
        const startedAt = new Date(answer.startedAt);
        if (!answer.outcome.ok) {
          failures.push({
            event,
            row: pendingRow(h, ids[i], event, startedAt),
            outcome: answer.outcome,
            startedAt,
          });
          return;
        }
        const now = new Date(answer.doneAt);
        meters.observe('succeeded', startedAt, now);
        metrics.lagSeconds.observe(Math.max(0, answer.doneAt - event.occurredAt) / 1000);
        // Built once, as written (one object per delivery, thousands a second).
        successes.push({
          id: ids[i],
          subscription: h.id,
          eventId: event.id,
          eventType: event.type,
          status: 'succeeded',
          attempts: 1,
          firstAttemptAt: startedAt,
          nextAttemptAt: startedAt,
          lastAttemptAt: now,
          lastStatusCode: answer.outcome.statusCode,
          lastError: null,
          deliveredAt: now,
          createdAt: startedAt,
        });
        h.confirmed = event.id;
        h.sent++;
        delivered++;
      },
    );
    const [failure] = failures;
    if (failure) {
      await failed(h, failure.event, failure.row, failure.outcome, failure.startedAt);
      return false;
    }
    return delivered === events.length;
  }

  /** The row of a delivery about to be retried (its first attempt failed on the fast path). */
  function pendingRow(h: Held, id: string, event: LiveEvent, startedAt: Date): DeliveryRow {
    return {
      id,
      subscription: h.id,
      eventId: event.id,
      eventType: event.type,
      status: 'pending',
      attempts: 0,
      firstAttemptAt: null,
      nextAttemptAt: startedAt,
      lastAttemptAt: null,
      lastStatusCode: null,
      lastError: null,
      deliveredAt: null,
      createdAt: startedAt,
    };
  }

  /** A fast-path failure: the successes before it are written, then its row, and the slow path takes over. */
  async function failed(
    h: Held,
    event: LiveEvent,
    row: DeliveryRow,
    outcome: Outcome,
    startedAt: Date,
  ): Promise<void> {
    // The successes before it first (the cursor reaches the event before this one), then its row.
    await flush();
    h.mode = 'slow';
    if (h.lost) return;
    const written = await store.recordFirstFailure(
      instance,
      { id: h.id, from: h.flushed, to: event.id },
      row,
    );
    if (!written) return;
    h.confirmed = h.flushed = event.id;
    const sub = await store.subscription(h.id);
    const delivery = await store.delivery(row.id);
    if (sub && delivery) await slow.record(sub, delivery, outcome, startedAt);
  }

  /** Writes the successes so far and the cursors of the fast path, in one transaction. */
  function flush(): Promise<void> {
    return inSeries(async () => {
      const batch = successes;
      successes = [];
      const moves = [...held.values()]
        .filter((h) => h.mode === 'fast' && !h.lost && h.confirmed > h.flushed)
        .map((h) => ({ h, id: h.id, from: h.flushed, to: h.confirmed }));
      if (moves.length === 0) return;
      try {
        const moved = await store.recordSuccesses(instance, moves, batch);
        for (const { h, to } of moves) {
          if (moved.has(h.id)) h.flushed = to;
          // Not moved: a replay moved the cursor back, or the lease is gone; the slow path reads it again.
          else h.wantSlow = true;
        }
      } catch (error) {
        // Nothing written: the successes are sent again from the cursor (at least once).
        logger.warn({ err: error }, 'webhook delivery records not written');
        for (const { h } of moves) {
          h.confirmed = h.flushed;
          h.wantSlow = true;
          if (h.stream) h.stream.discard = true;
        }
        writeFailed();
      }
    });
  }

  return {
    next,
    send,
    failed,
    pendingRow,
    succeeded(row) {
      successes.push(row);
    },
    unwritten() {
      return successes.length > 0 || [...held.values()].some((h) => h.confirmed > h.flushed);
    },
    flush,
  };
}

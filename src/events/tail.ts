// The relay: follows the outbox table in id order and hands every committed event, once and in
// order, to this instance's listeners (the WebSocket gateway). The table is the source of truth:
// a nudge (a local commit, or a Redis message from another instance) only says "read now", and a
// periodic poll catches anything a lost nudge missed (a crash between commit and publish included).

import type { OutboxEvent } from '../db/entities/OutboxEvent.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { PublishedEvent } from './filter.ts';
import { type EventStore, toPublished } from './store.ts';

const BATCH = 500;
/**
 * How long a gap in the ids may stay open before the relay waits for every writer in flight (which
 * also holds up new writers for that moment). A missing id almost always belongs to a transaction
 * that commits within milliseconds, and its commit nudges the relay; only a rolled-back insert (or
 * a transaction slower than this) leaves a gap open that long.
 */
const GAP_PATIENCE_MS = 50;
/**
 * Pacing: after handing events over, the relay reads again no sooner than the hand-over took (at
 * most this long). Fanning an event out to many sockets costs a write per socket whether it carries
 * one event or several, so under load the events committed meanwhile go out together and the
 * fan-out takes at most about half of the event loop; with few sockets the pause is negligible.
 */
const MAX_PACE_MS = 20;

export type EventListener = (events: readonly PublishedEvent[]) => void;

export class OutboxTail {
  private position = 0;
  private reading: Promise<void> | null = null;
  private again = false;
  /** A read asked for by `flush`: settle any gap at once instead of waiting for it to close. */
  private settleNow = false;
  /** When the relay first saw the gap it is waiting on (null: no gap open). */
  private gapSince: number | null = null;
  private gapTimer: NodeJS.Timeout | null = null;
  /** No read before this time (performance.now()), unless a flush asks for one. */
  private paceUntil = 0;
  private paceTimer: NodeJS.Timeout | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<EventListener>();
  private readonly store: EventStore;
  private readonly pollMs: number;
  private readonly logger: Logger;
  private readonly metrics: Metrics;

  /** Waits until no event writer is in flight (PostgreSQL); absent where ids commit in order. */
  private readonly settleGaps: (() => Promise<void>) | undefined;

  constructor(
    store: EventStore,
    options: { pollMs: number; logger: Logger; metrics: Metrics; settleGaps?: () => Promise<void> },
  ) {
    this.store = store;
    this.settleGaps = options.settleGaps;
    this.pollMs = options.pollMs;
    this.logger = options.logger;
    this.metrics = options.metrics;
  }

  /**
   * The id of the last event handed to listeners: live subscribers start after it, and every id at
   * or below it is final (committed or never to be), so readers of the outbox stop there.
   */
  get lastId(): number {
    return this.position;
  }

  /**
   * Starts after the newest committed event: history is served by replay, not re-published. Every
   * id at or below the position is final (readers cap at it), so writers in flight are waited for.
   */
  async start(): Promise<void> {
    const { newest } = await this.store.range();
    await this.settleGaps?.();
    this.position = newest ?? 0;
    this.timer = setInterval(() => this.nudge(), this.pollMs);
    this.timer.unref();
  }

  onEvents(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Read what has been committed since the last read; concurrent nudges collapse into one more read. */
  nudge(): void {
    if (this.reading) {
      this.again = true;
      return;
    }
    const wait = this.paceUntil - performance.now();
    if (wait >= 1 && !this.settleNow) {
      if (!this.paceTimer) {
        this.paceTimer = setTimeout(() => {
          this.paceTimer = null;
          this.nudge();
        }, wait);
      }
      return;
    }
    this.reading = this.drain().finally(() => {
      this.reading = null;
      if (this.again) {
        this.again = false;
        this.nudge();
      }
    });
  }

  /** Resolves once everything committed before the call has been handed to listeners. */
  async flush(): Promise<void> {
    // A read already under way may have started before the commits this call must cover.
    while (this.reading) await this.reading;
    this.settleNow = true;
    this.nudge();
    while (this.reading) await this.reading;
  }

  private publish(rows: readonly OutboxEvent[]): void {
    if (rows.length === 0) return;
    const events = rows.map(toPublished);
    this.position = events[events.length - 1].id;
    for (const event of events) this.metrics.eventsPublished.inc({ type: event.type });
    const started = performance.now();
    for (const listener of this.listeners) {
      try {
        listener(events);
      } catch (error) {
        this.logger.error({ err: error }, 'event listener failed');
      }
    }
    const ended = performance.now();
    this.paceUntil = ended + Math.min(ended - started, MAX_PACE_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.gapTimer) clearTimeout(this.gapTimer);
    if (this.paceTimer) clearTimeout(this.paceTimer);
    this.timer = null;
    this.gapTimer = null;
    this.paceTimer = null;
  }

  private async drain(): Promise<void> {
    const settleNow = this.settleNow;
    this.settleNow = false;
    try {
      for (;;) {
        let rows = await this.store.next(this.position, BATCH);
        if (rows.length === 0) {
          this.gapSince = null;
          return;
        }
        const contiguous = contiguousPrefix(this.position, rows);
        if (contiguous < rows.length && this.settleGaps) {
          // A missing id may belong to a transaction still in flight: deliver what precedes the gap.
          this.publish(rows.slice(0, contiguous));
          const now = Date.now();
          this.gapSince ??= now;
          if (!settleNow && now - this.gapSince < GAP_PATIENCE_MS) {
            // Its commit will nudge the relay; if none comes in time, look again then.
            if (!this.gapTimer) {
              this.gapTimer = setTimeout(
                () => {
                  this.gapTimer = null;
                  this.nudge();
                },
                GAP_PATIENCE_MS - (now - this.gapSince),
              );
              this.gapTimer.unref();
            }
            return;
          }
          // Wait for the writers in flight: then everything up to the largest id seen is final.
          const seen = Number(rows[rows.length - 1].id);
          await this.settleGaps();
          rows = (await this.store.next(this.position, BATCH)).filter((row) => Number(row.id) <= seen);
        }
        this.gapSince = null;
        this.publish(rows);
        if (rows.length < BATCH) return;
      }
    } catch (error) {
      // The next nudge or poll retries from the same position: nothing is skipped.
      this.logger.warn({ err: error }, 'outbox read failed');
      if (settleNow) this.settleNow = true;
    }
  }
}

/** How many rows, from the first, follow `position` without a missing id. */
function contiguousPrefix(position: number, rows: readonly OutboxEvent[]): number {
  let expected = position + 1;
  for (let index = 0; index < rows.length; index++) {
    if (Number(rows[index].id) !== expected) return index;
    expected += 1;
  }
  return rows.length;
}

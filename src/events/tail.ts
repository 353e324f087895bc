// The relay: follows the outbox table in id order and hands every committed event, once and in
// order, to this instance's listeners (the WebSocket gateway). The table is the source of truth:
// a nudge (a local commit, or a Redis message from another instance) only says "read now", and a
// periodic poll catches anything a lost nudge missed (a crash between commit and publish included).

import type { OutboxEvent } from '../db/entities/OutboxEvent.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { PublishedEvent } from './filter.ts';
import { type ChangeRow, type EventStore, toPublished } from './store.ts';

const BATCH = 500;
/**
 * How long a gap in the ids may stay open before the relay waits for every writer in flight (which
 * also holds up new writers for that moment). A missing id almost always belongs to a transaction
 * that commits within milliseconds, and its commit nudges the relay; only a rolled-back insert (or
 * a transaction slower than this) leaves a gap open that long.
 */
const GAP_PATIENCE_MS = 50;
/**
 * Past GAP_PATIENCE_MS the relay checks, without waiting, whether any writer is still in flight
 * (when none is, the gap is final); it waits for them only once the gap is this old, since that
 * wait also holds up every new writer until the writers in flight finish.
 */
const GAP_MAX_PATIENCE_MS = 1000;
/**
 * Pacing: after handing events over, the relay reads again no sooner than the hand-over took (at
 * most this long). Fanning an event out to many sockets costs a write per socket whether it carries
 * one event or several, so under load the events committed meanwhile go out together and the
 * fan-out takes at most about half of the event loop; with few sockets the pause is negligible.
 */
const MAX_PACE_MS = 20;
/**
 * Internal changes (ledger_change: wallet links) are read at most this often: under a write load the
 * relay reads the outbox hundreds of times a second, and a second query each time cost PostgreSQL
 * transfers throughput; a link reaches other instances within this or, without further commits,
 * at the next poll.
 */
const CHANGES_EVERY_MS = 100;

export type EventListener = (events: readonly PublishedEvent[]) => void;
export type ChangeListener = (changes: readonly ChangeRow[]) => void;

export class OutboxTail {
  private position = 0;
  /** The newest price update at or below `position` (0: none): `newestPriceUpdate`. */
  private priceUpdate = 0;
  private reading: Promise<void> | null = null;
  private again = false;
  /** A read asked for by `flush`: settle any gap at once instead of waiting for it to close. */
  private settleNow = false;
  /** The open gap: the position it follows and when the relay first saw it (null: none). */
  private gap: { after: number; since: number } | null = null;
  private gapTimer: NodeJS.Timeout | null = null;
  /** No read before this time (performance.now()), unless a flush asks for one. */
  private paceUntil = 0;
  private paceTimer: NodeJS.Timeout | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<EventListener>();
  /** Internal changes (ledger_change): read after the events, only while someone listens. */
  private readonly changeListeners = new Set<ChangeListener>();
  private changePosition = 0;
  private changesReadAt = 0;
  private readonly store: EventStore;
  private readonly pollMs: number;
  private readonly logger: Logger;
  private readonly metrics: Metrics;

  /**
   * PostgreSQL: with `wait`, resolves once no event writer that was in flight at the call still is
   * (true); without, tells at once whether none is in flight. Absent where ids commit in order.
   */
  private readonly settleGaps: ((wait: boolean) => Promise<boolean>) | undefined;

  constructor(
    store: EventStore,
    options: {
      pollMs: number;
      logger: Logger;
      metrics: Metrics;
      settleGaps?: (wait: boolean) => Promise<boolean>;
    },
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
   * The newest `priceUpdate` at or below `lastId` (0 when there is none): the relay hands over every
   * event up to its position, so it knows. A wallet's event read passes it with `lastId`
   * (EventStore `after`): its price updates' branch stops there instead of passing every partition
   * of the log up to the position when prices are rare (issue 34). Read in the same tick as `lastId`.
   */
  get newestPriceUpdate(): number {
    return this.priceUpdate;
  }

  /**
   * Starts after the newest committed event: history is served by replay, not re-published. Every
   * id at or below the position is final (readers cap at it), so writers in flight are waited for.
   */
  async start(): Promise<void> {
    const newest = await this.store.newest();
    const newestChange = await this.store.newestChange();
    await this.settleGaps?.(true);
    this.position = newest ?? 0;
    this.priceUpdate = await this.store.newestOfType('priceUpdate', this.position);
    this.changePosition = newestChange;
    this.timer = setInterval(() => this.nudge(), this.pollMs);
    this.timer.unref();
  }

  onEvents(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Internal ledger changes committed by any instance (wallet links), once each, in id order. */
  onChanges(listener: ChangeListener): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
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
    const now = Date.now();
    for (const row of rows) {
      if (row.type === 'priceUpdate') this.priceUpdate = Number(row.id);
      this.metrics.eventsPublished.inc({ type: row.type });
      this.metrics.relay.lagSeconds.observe((now - row.occurredAt.getTime()) / 1000);
    }
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
    await this.drainEvents();
    const now = performance.now();
    if (this.changeListeners.size > 0 && now - this.changesReadAt >= CHANGES_EVERY_MS) {
      this.changesReadAt = now;
      await this.drainChanges();
    }
  }

  /**
   * Internal changes are few (a wallet link now and then) and their writers hold the same writer
   * lock as event writers: on a gap in their ids the relay simply waits for the writers in flight,
   * after which every id below the largest seen is final.
   */
  private async drainChanges(): Promise<void> {
    try {
      for (;;) {
        let rows = await this.store.changesAfter(this.changePosition, BATCH);
        if (rows.length === 0) return;
        let expected = this.changePosition + 1;
        const contiguous = rows.every((row) => row.id === expected++);
        if (!contiguous && this.settleGaps) {
          const seen = rows[rows.length - 1].id;
          await this.settleGaps(true);
          rows = (await this.store.changesAfter(this.changePosition, BATCH)).filter((row) => row.id <= seen);
        }
        this.changePosition = rows[rows.length - 1].id;
        for (const listener of this.changeListeners) {
          try {
            listener(rows);
          } catch (error) {
            this.logger.error({ err: error }, 'change listener failed');
          }
        }
        if (rows.length < BATCH) return;
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'ledger change read failed');
    }
  }

  private async drainEvents(): Promise<void> {
    // A flush: everything committed before it has an id at or below the largest the first read sees,
    // so one settled gap is enough.
    let settleNow = this.settleNow;
    this.settleNow = false;
    try {
      for (;;) {
        let rows = await this.store.next(this.position, BATCH);
        this.metrics.relay.read();
        if (rows.length === 0) {
          this.gap = null;
          return;
        }
        const contiguous = contiguousPrefix(this.position, rows);
        if (contiguous < rows.length && this.settleGaps) {
          // A missing id may belong to a transaction still in flight: deliver what precedes the gap.
          this.publish(rows.slice(0, contiguous));
          const now = Date.now();
          if (this.gap?.after !== this.position) this.gap = { after: this.position, since: now };
          const age = now - this.gap.since;
          // Usually its commit comes (and nudges the relay) within moments. Otherwise, every id
          // below the largest seen is final once no writer is in flight: check that without
          // waiting, and wait for the writers in flight only when the gap has stayed open long.
          const seen = Number(rows[rows.length - 1].id);
          const final =
            settleNow || age >= GAP_MAX_PATIENCE_MS
              ? await this.settleGaps(true)
              : age >= GAP_PATIENCE_MS && (await this.settleGaps(false));
          if (!final) {
            if (!this.gapTimer) {
              this.gapTimer = setTimeout(
                () => {
                  this.gapTimer = null;
                  this.nudge();
                },
                age < GAP_PATIENCE_MS ? GAP_PATIENCE_MS - age : GAP_PATIENCE_MS,
              );
              this.gapTimer.unref();
            }
            return;
          }
          settleNow = false;
          rows = (await this.store.next(this.position, BATCH)).filter((row) => Number(row.id) <= seen);
          this.gap = null;
          this.publish(rows);
          continue; // what came after the largest id seen
        }
        this.gap = null;
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

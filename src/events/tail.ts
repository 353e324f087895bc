// The relay: follows the outbox table in id order and hands every committed event, once and in
// order, to this instance's listeners (the WebSocket gateway). The table is the source of truth:
// a nudge (a local commit, or a Redis message from another instance) only says "read now", and a
// periodic poll catches anything a lost nudge missed (a crash between commit and publish included).
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { PublishedEvent } from './filter.ts';
import { type EventStore, toPublished } from './store.ts';

const BATCH = 500;

export type EventListener = (events: readonly PublishedEvent[]) => void;

export class OutboxTail {
  private position = 0;
  private reading: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<EventListener>();
  private readonly store: EventStore;
  private readonly pollMs: number;
  private readonly logger: Logger;
  private readonly metrics: Metrics;

  constructor(store: EventStore, options: { pollMs: number; logger: Logger; metrics: Metrics }) {
    this.store = store;
    this.pollMs = options.pollMs;
    this.logger = options.logger;
    this.metrics = options.metrics;
  }

  /** The id of the last event handed to listeners: live subscribers start after it. */
  get lastId(): number {
    return this.position;
  }

  /** Starts after the newest committed event: history is served by replay, not re-published. */
  async start(): Promise<void> {
    const { newest } = await this.store.range();
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
    this.nudge();
    while (this.reading) await this.reading;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async drain(): Promise<void> {
    try {
      for (;;) {
        const rows = await this.store.after(this.position, BATCH);
        if (rows.length === 0) return;
        const events = rows.map(toPublished);
        this.position = events[events.length - 1].id;
        for (const event of events) this.metrics.eventsPublished.inc({ type: event.type });
        for (const listener of this.listeners) {
          try {
            listener(events);
          } catch (error) {
            this.logger.error({ err: error }, 'event listener failed');
          }
        }
        if (rows.length < BATCH) return;
      }
    } catch (error) {
      // The next nudge or poll retries from the same position: nothing is skipped.
      this.logger.warn({ err: error }, 'outbox read failed');
    }
  }
}

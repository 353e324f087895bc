// Replay: a `subscribe` with `lastEventId` is sent the retained matching events after it before any
// live event. Replay is the one thing a client can ask for whose cost grows with the history, so it
// is bounded (finding 13.2: 1,000 subscribes from "0" by one user starved every other client):
// - a resume point more than WS_MAX_REPLAY_EVENTS event ids behind the newest event is not replayed:
//   the client is sent `resync_required` and catches up over REST (`GET /api/v1/events?after=`),
//   whose pages are rate-limited like every other request;
// - at most one replay runs per connection, WS_MAX_REPLAYS_PER_KEY per API key and
//   WS_MAX_REPLAYS_PER_USER per user at once, on this instance; the others wait their turn
//   (first come, first served), their subscription already made and its live events held;
// - replays go a step at a time (a page of 100 events read, or 16 KiB of frames written), taking
//   turns instance-wide and pausing after each step as long as it took (ReplayPacer), so that
//   other clients always get the event loop; and a replay waits for its client's socket to drain
//   (backpressure) before its next step.
import { setTimeout as sleep, setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { ResyncRequiredMessageReason } from '../../generated/asyncapi/models/index.ts';
import type { Config } from '../config/index.ts';
import type { OutboxEvent } from '../db/entities/OutboxEvent.ts';
import type { EventFilter } from '../events/filter.ts';
import { skippedBetween } from '../events/restores.ts';
import { prunedSince, retainedEvents } from '../events/retention.ts';
import { type EventStore, toPublished } from '../events/store.ts';
import type { OutboxTail } from '../events/tail.ts';
import { eventFrame } from './frames.ts';

/** Events read per database read: one step's read stays short. */
export const REPLAY_PAGE = 100;
/** The longest pause after a replay step (see ReplayPacer). */
const MAX_PAUSE_MS = 20;
/** Bytes of frames written to a replaying client in one go, before waiting for socket backpressure. */
const HIGH_WATER_BYTES = 16 * 1024;

/** Why a resume point is refused; the contract's `ResyncRequiredMessage.reason`. */
export type ResyncReason = ResyncRequiredMessageReason;

export interface Resync {
  reason: ResyncReason;
  oldestEventId: number | null;
  /** REST catch-up from the requested point (relative URL), when REST can serve it. */
  catchUp: string | null;
  detail: string;
}

/** What a replay needs of its connection (implemented by the gateway). */
export interface ReplaySink {
  /** False once the connection closed or the subscription ended: the replay stops there. */
  open(): boolean;
  /** Writes ready-made frames, in order. */
  write(frames: Buffer[]): void;
  /**
   * Resolves at once while the connection's socket takes more without queueing much (no
   * backpressure), else once it has drained, or the connection ended.
   */
  drained(): Promise<void>;
}

export interface ReplaySubscription {
  id: string;
  filter: EventFilter;
  /** The last event id sent to the subscription (replay and live delivery skip ids at or below it). */
  lastSentId: number;
}

export interface ReplayResult {
  count: number;
  lastReplayed: number | null;
}

/**
 * Counters of replays in flight per named scope (`conn:…`, `key:…`, `user:…`), each with its own
 * maximum; a replay runs when every scope it counts against has room, waiters in the order they asked.
 */
export class ReplaySlots {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting: { scopes: [string, number][]; admit: () => void }[] = [];

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves, once admitted, with the function that gives the slot back (call it exactly once). */
  acquire(scopes: [name: string, max: number][]): Promise<() => void> {
    return new Promise((resolve) => {
      const admit = () => {
        for (const [name] of scopes) this.inFlight.set(name, (this.inFlight.get(name) ?? 0) + 1);
        resolve(() => this.release(scopes));
      };
      if (this.fits(scopes)) admit();
      else this.waiting.push({ scopes, admit });
    });
  }

  private fits(scopes: [string, number][]): boolean {
    return scopes.every(([name, max]) => (this.inFlight.get(name) ?? 0) < max);
  }

  private release(scopes: [string, number][]): void {
    for (const [name] of scopes) {
      const count = (this.inFlight.get(name) ?? 1) - 1;
      if (count <= 0) this.inFlight.delete(name);
      else this.inFlight.set(name, count);
    }
    // The first in line whose scopes all have room goes next.
    for (let index = 0; index < this.waiting.length; ) {
      const waiter = this.waiting[index];
      if (this.fits(waiter.scopes)) {
        this.waiting.splice(index, 1);
        waiter.admit();
      } else {
        index++;
      }
    }
  }
}

export class Replayer {
  private readonly store: EventStore;
  private readonly tail: OutboxTail;
  private readonly config: Config['ws'];
  private readonly slots = new ReplaySlots();
  private readonly pacer = new ReplayPacer();

  constructor(store: EventStore, tail: OutboxTail, config: Config['ws']) {
    this.store = store;
    this.tail = tail;
    this.config = config;
  }

  /** Replays waiting for a slot on this instance. */
  get queued(): number {
    return this.slots.queued;
  }

  /**
   * Whether a replay from `after` can be honoured: null if so, else why not (`resync_required`).
   * Reads the database (throws when it is unavailable).
   */
  async check(after: number): Promise<Resync | null> {
    // Subscribes of many connections would otherwise run their reads back to back without letting
    // the event loop serve anyone else (on SQLite each read is synchronous).
    await yieldToEventLoop();
    const [retained, newestStored] = await Promise.all([retainedEvents(this.store), this.store.newest()]);
    const oldestEventId = retained.oldest;
    const newest = Math.max(newestStored ?? 0, this.tail.lastId);
    const catchUp = `/api/v1/events?after=${after}`;
    const pruned = prunedSince(after, retained);
    if (pruned) {
      return {
        reason: 'pruned',
        oldestEventId,
        catchUp: null,
        detail: `${pruned}.`,
      };
    }
    if (after > newest) {
      return {
        reason: 'not_yet',
        oldestEventId,
        catchUp: null,
        detail: `Event ${after} does not exist yet.`,
      };
    }
    // Ids a restore skipped are no events: they do not count towards the replay's depth.
    const behind = newest - after - skippedBetween(after, newest, retained.restores);
    if (behind > this.config.maxReplayEvents) {
      return {
        reason: 'too_far_back',
        oldestEventId,
        catchUp,
        detail:
          `Event ${after} is ${behind} events behind the newest; the WebSocket replays at most ` +
          `${this.config.maxReplayEvents}. Read GET ${catchUp} page by page, then subscribe with the last id read.`,
      };
    }
    return null;
  }

  /**
   * Sends `subscription` the retained matching events after its `lastSentId`, once a slot is free
   * for the connection (`connection` names it), its API key and its user. Throws when the database
   * fails; stops early (returning what it sent) when the sink closes.
   */
  async run(
    sink: ReplaySink,
    subscription: ReplaySubscription,
    scope: { connection: string; key: string; user: string },
  ): Promise<ReplayResult> {
    const release = await this.slots.acquire([
      [`conn:${scope.connection}`, 1],
      [`key:${scope.key}`, this.config.maxReplaysPerKey],
      [`user:${scope.user}`, this.config.maxReplaysPerUser],
    ]);
    try {
      return await this.pages(sink, subscription);
    } finally {
      release();
    }
  }

  private async pages(sink: ReplaySink, subscription: ReplaySubscription): Promise<ReplayResult> {
    const result: ReplayResult = { count: 0, lastReplayed: null };
    if (!sink.open()) return result;
    // Everything committed before the subscribe is settled first, so it comes before `replayed`.
    await this.tail.flush();
    let rows: OutboxEvent[] = [];
    let next = 0;
    let more = true;
    let after = subscription.lastSentId;
    for (;;) {
      const finished = await this.pacer.step(async () => {
        if (next === rows.length) {
          // Only ids the relay has already settled: on PostgreSQL a later id can be visible while
          // an earlier one still commits; sending the later one here would make the earlier one
          // look "already sent" when it arrives live. Everything past the relay's position comes live.
          rows = await this.store.after(
            after,
            REPLAY_PAGE,
            subscription.filter,
            this.tail.lastId,
            this.tail.newestPriceUpdate,
          );
          next = 0;
          more = rows.length === REPLAY_PAGE;
          if (rows.length > 0) after = Number(rows[rows.length - 1].id);
          if (!sink.open()) return true;
        }
        // At most HIGH_WATER_BYTES of frames per step: large events go out a few at a time.
        const frames: Buffer[] = [];
        let bytes = 0;
        while (next < rows.length && bytes < HIGH_WATER_BYTES) {
          const event = toPublished(rows[next++]);
          if (event.id <= subscription.lastSentId) continue;
          const frame = eventFrame(event, subscription.id);
          frames.push(frame);
          bytes += frame.length;
          subscription.lastSentId = event.id;
          result.lastReplayed = event.id;
          result.count += 1;
        }
        if (frames.length > 0) sink.write(frames);
        return next === rows.length && !more;
      });
      // History goes at the client's pace; what follows (the next step, `replayed`, held live
      // events) waits until the client took this. Outside the step: a slow client holds up no one else.
      await sink.drained();
      if (finished || !sink.open()) return result;
    }
  }
}

/**
 * Replays on an instance take turns a step at a time (a page read, or up to 16 KiB of frames), and
 * after a step the next one waits as long as that step took (at most MAX_PAUSE_MS): replays
 * together use at most about half of the event loop, and any other work waits for at most one step.
 */
export class ReplayPacer {
  private lane: Promise<void> = Promise.resolve();
  private resumeAt = 0;

  async step<T>(work: () => Promise<T>): Promise<T> {
    const previous = this.lane;
    let done = () => {};
    this.lane = new Promise((resolve) => {
      done = resolve;
    });
    await previous;
    const wait = this.resumeAt - performance.now();
    if (wait >= 1) await sleep(wait);
    else await yieldToEventLoop();
    const started = performance.now();
    try {
      return await work();
    } finally {
      const ended = performance.now();
      // Capped: a step that mostly waited on a slow database (PostgreSQL) did not use the event loop.
      this.resumeAt = ended + Math.min(ended - started, MAX_PAUSE_MS);
      done();
    }
  }
}

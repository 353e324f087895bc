// What the dispatcher (./dispatcher.ts) and its parts (./leases.ts, ./fast-path.ts, ./streams.ts, ./slow-path.ts)
// share: its options, the delivery metrics, a subscription it holds the lease of (`Held`), and the events it sends (`LiveEvent`: the
// relay's, or caught up from the outbox through the relay's own row mapping).
import type { Counter, Histogram } from 'prom-client';
import type { OutboxEvent } from '../db/entities/OutboxEvent.ts';
import type { EventFilter, PublishedEvent } from '../events/filter.ts';
import { toPublished } from '../events/store.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { clock } from './clock.ts';
import type { StreamEvent, StreamReport } from './send-thread.ts';
import type { TargetPolicy } from './targets.ts';

/** A subscription with nothing to send this long is let go (its stream stopped, its lease released). */
export const IDLE_RELEASE_MS = 2000;

/** Events read from the outbox (or turned into deliveries) per step. */
export const MATERIALIZE_BATCH = 200;

export interface DispatcherOptions extends TargetPolicy {
  timeoutMs: number;
  concurrency: number;
  /** Of `concurrency`, the most one account's subscriptions hold at once (30.7). */
  concurrencyPerOwner: number;
  retryBaseMs: number;
  retryWindowSeconds: number;
  disableAfterSeconds: number;
}

/**
 * An event as the dispatcher sends it (a copy: the relay's objects carry the gateway's frames), as
 * the sender thread's streams take it, and from where it came.
 */
export interface LiveEvent extends Omit<StreamEvent, 'at' | 'time'> {
  source: 'relay' | 'catch_up';
}

/** The index of the first of `events` (in id order) after the event `id`. */
export function firstAfter(events: readonly LiveEvent[], id: number): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (events[mid].id <= id) low = mid + 1;
    else high = mid;
  }
  return low;
}

const OCCURRED_AT = /"occurredAt":"([^"]+)"/;

export function live(event: PublishedEvent): LiveEvent {
  const occurredAt = Date.parse(OCCURRED_AT.exec(event.json)?.[1] ?? '');
  return {
    id: event.id,
    type: event.type,
    assetId: event.assetId,
    collectionId: event.collectionId,
    wallets: event.wallets,
    json: event.json,
    occurredAt: Number.isNaN(occurredAt) ? Date.now() : occurredAt,
    heldAt: clock(),
    source: 'relay',
  };
}

/** An event caught up from the outbox: the relay's own mapping of a row (../events/store.ts). */
export function fromRow(row: OutboxEvent): LiveEvent {
  return { ...toPublished(row), occurredAt: row.occurredAt.getTime(), heldAt: clock(), source: 'catch_up' };
}

/** A subscription this instance holds the lease of. */
export interface Held {
  id: string;
  /** The subscription's owner (a user or service account) and the account whose slots it takes (30.7). */
  owner: string;
  account: string;
  url: string;
  sealed: string;
  previousSecretExpiresAt: number | null;
  /** The secrets that sign now (the previous one too while its overlap lasts). */
  secrets: string[];
  filter: EventFilter;
  mode: 'fast' | 'slow';
  /** Fast path: done with every event up to here (delivered or not wanted). */
  confirmed: number;
  /** The cursor as last written. */
  flushed: number;
  /** Asked (by the poll) to go through the slow path: a pending row is due, or a replay moved the cursor. */
  wantSlow: boolean;
  /** The lease is gone, or the subscription was disabled or deleted: stop. */
  lost: boolean;
  sent: number;
  lastWork: number;
  /** Its fast path's stream in the sender thread, while one runs. */
  stream: Streaming | null;
}

/** Why a stream was asked to end. */
export type StopReason = 'lost' | 'slow' | 'turn' | 'idle';

/** A subscription's stream in the sender thread (send-worker.ts), as the dispatcher follows it. */
export interface Streaming {
  gen: number;
  /** Why it was asked to end (null: it runs on). */
  stopping: StopReason | null;
  /** The writes failed meanwhile: its later successes are not taken (sent again from the cursor). */
  discard: boolean;
  /** The request that ended it. */
  failed: StreamReport['failed'];
  ended: Promise<void>;
  end: () => void;
}

/** The delivery metrics' label values, resolved once (not hashed again for each of thousands of deliveries a second). */
export function deliveryMeters(metrics: WebhookMetrics) {
  const stages = {
    relay: metrics.stageSeconds.labels({ stage: 'relay' }),
    catch_up: metrics.stageSeconds.labels({ stage: 'catch_up' }),
    queue: metrics.stageSeconds.labels({ stage: 'queue' }),
    handoff: metrics.stageSeconds.labels({ stage: 'handoff' }),
    request: metrics.stageSeconds.labels({ stage: 'request' }),
    return: metrics.stageSeconds.labels({ stage: 'return' }),
  };
  const outcomes = Object.fromEntries(
    (['succeeded', 'failed', 'given_up'] as const).map((outcome) => [
      outcome,
      { attempts: metrics.attempts.labels({ outcome }), seconds: metrics.attemptSeconds.labels({ outcome }) },
    ]),
  ) as Record<
    'succeeded' | 'failed' | 'given_up',
    { attempts: Counter.Internal; seconds: Histogram.Internal<'outcome'> }
  >;
  return {
    stages,
    outcomes,
    /** Counts an attempt's outcome and duration. */
    observe(outcome: 'succeeded' | 'failed' | 'given_up', startedAt: Date, now: Date): void {
      outcomes[outcome].attempts.inc();
      outcomes[outcome].seconds.observe((now.getTime() - startedAt.getTime()) / 1000);
    },
  };
}

export type DeliveryMeters = ReturnType<typeof deliveryMeters>;

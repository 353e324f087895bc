// The streams of the webhook fast path: once a subscription is up to date (every event after its
// position is in the relay's recent events), its fast path runs in the sender thread
// (send-worker.ts): the relay's batches are posted there once for all streams, and the thread
// matches, signs and sends each subscription's events in order, the next request as soon as the
// previous answer is in. It reports its deliveries in batches (written by ./fast-path.ts with the
// next flush) and how far the subscription is done. A stream is stopped when the lease is lost, the
// subscription must take the slow path, its turn is over (./leases.ts), or it is idle; its first
// failure is recorded by the fast path, and the slow path takes over.
import type { WebhookMetrics } from '../observability/metrics.ts';
import { clock } from './clock.ts';
import type { FastPath } from './fast-path.ts';
import {
  type DeliveryMeters,
  type Held,
  IDLE_RELEASE_MS,
  type LiveEvent,
  type StopReason,
  type Streaming,
} from './held.ts';
import type { Leases } from './leases.ts';
import type { RecentEvents } from './recent-events.ts';
import { DELIVERY_FIELDS, type SendThread, type StreamReport } from './send-thread.ts';

/** What the streams share with the dispatcher. */
export interface StreamContext {
  sender: SendThread;
  sendOptions: Parameters<SendThread['series']>[3];
  /** The subscriptions this instance holds (the dispatcher's). */
  held: ReadonlyMap<string, Held>;
  recent: RecentEvents;
  fast: FastPath;
  leases: Leases;
  meters: DeliveryMeters;
  metrics: WebhookMetrics;
  /** The dispatcher is stopping: every stream ends. */
  stopped: () => boolean;
}

export interface Streams {
  /** Whether the fast path may run in the sender thread: the events after `confirmed` are all in memory. */
  canStream(h: Held): boolean;
  /**
   * Runs the subscription's fast path in the sender thread until it fails or is asked to stop (by
   * `check`); why it ended.
   */
  stream(h: Held): Promise<StopReason | 'failed' | 'ended'>;
  /** Asks the streams that must end to stop (their lease lost, the slow path wanted, their turn over, idle). */
  check(): void;
}

export function createStreams(context: StreamContext): Streams {
  const { sender, sendOptions, held, recent, fast, leases, meters, metrics, stopped } = context;
  /** Streams started (each has its own generation). */
  let nextGen = 1;

  function canStream(h: Held): boolean {
    return !stopped() && !h.lost && !h.wantSlow && h.mode === 'fast' && recent.covers(h.confirmed);
  }

  /**
   * The thread is handed the events after `confirmed` that are here already, then every later batch
   * of the relay's, and sends them in order; its reports come to `streamed`. Until it ends: its first
   * failure (recorded here, and the slow path takes over), or a stop asked by `check`.
   */
  async function stream(h: Held): Promise<StopReason | 'failed' | 'ended'> {
    let end = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const gen = nextGen++;
    const streaming: Streaming = { gen, stopping: null, discard: false, failed: undefined, ended, end };
    h.stream = streaming;
    // The events it wants after its position that are here already; later ones follow in order.
    const backlog = recent.matching(h.confirmed, h.filter).events;
    const upTo = Math.max(h.confirmed, recent.lastId ?? h.confirmed);
    sender.startStream(
      {
        id: h.id,
        gen,
        url: h.url,
        secrets: h.secrets,
        filter: {
          types: [...h.filter.types],
          wallet: h.filter.wallet,
          assetId: h.filter.assetId,
          collection: h.filter.collection,
        },
        options: sendOptions,
        events: backlog,
        upTo,
      },
      (report) => streamed(h, streaming, report),
    );
    h.lastWork = Date.now();
    check();
    await ended;
    const failed = streaming.failed;
    // Ended by the thread itself (it died, or the subscription fell too far behind): from the cursor.
    if (!failed) return streaming.stopping ?? 'ended';
    // The writes failed meanwhile: the slow path goes on from the cursor as written (wantSlow is set).
    if (streaming.discard) return 'slow';
    const startedAt = new Date(failed.sent.startedAt);
    const event = { id: failed.eventId, type: failed.type } as LiveEvent;
    await fast.failed(
      h,
      event,
      fast.pendingRow(h, failed.deliveryId, event, startedAt),
      failed.sent.outcome,
      startedAt,
    );
    return 'failed';
  }

  /** A stream's report: its deliveries (written with the next flush), how far it is done, its end. */
  function streamed(h: Held, streaming: Streaming, report: StreamReport): void {
    const { numbers, ids, types } = report;
    const received = clock();
    if (!streaming.discard) {
      const count = ids.length;
      for (let i = 0; i < count; i++) {
        const at = i * DELIVERY_FIELDS;
        const eventId = numbers[at];
        const occurredAt = numbers[at + 1];
        const heldAt = numbers[at + 2];
        const threadAt = numbers[at + 3];
        const started = numbers[at + 4];
        const done = numbers[at + 5];
        // To the thread; waiting behind the subscription's earlier requests; the request; the report back.
        meters.stages.relay.observe(Math.max(0, heldAt - occurredAt) / 1000);
        meters.stages.queue.observe(Math.max(0, threadAt - heldAt) / 1000);
        meters.stages.handoff.observe(Math.max(0, started - threadAt) / 1000);
        meters.stages.request.observe(Math.max(0, done - started) / 1000);
        meters.stages.return.observe(Math.max(0, received - done) / 1000);
        meters.outcomes.succeeded.attempts.inc();
        meters.outcomes.succeeded.seconds.observe((done - started) / 1000);
        metrics.lagSeconds.observe(Math.max(0, done - occurredAt) / 1000);
        const startedAt = new Date(started);
        const doneAt = new Date(done);
        fast.succeeded({
          id: ids[i],
          subscription: h.id,
          eventId,
          eventType: types[i],
          status: 'succeeded',
          attempts: 1,
          firstAttemptAt: startedAt,
          nextAttemptAt: startedAt,
          lastAttemptAt: doneAt,
          lastStatusCode: numbers[at + 6],
          lastError: null,
          deliveredAt: doneAt,
          createdAt: startedAt,
        });
      }
      if (count > 0) {
        h.sent += count;
        h.lastWork = Date.now();
      }
      if (report.confirmed > h.confirmed) h.confirmed = report.confirmed;
    }
    if (report.failed) {
      streaming.failed = report.failed;
      meters.stages.request.observe(
        Math.max(0, report.failed.sent.doneAt - report.failed.sent.startedAt) / 1000,
      );
    }
    if (report.stopped) {
      if (h.stream === streaming) h.stream = null;
      streaming.end();
    } else if (leases.turnOver(h)) check();
  }

  function check(): void {
    const now = Date.now();
    for (const h of held.values()) {
      const streaming = h.stream;
      if (!streaming || streaming.stopping) continue;
      const reason: StopReason | null =
        stopped() || h.lost
          ? 'lost'
          : h.wantSlow
            ? 'slow'
            : leases.turnOver(h)
              ? 'turn'
              : now - h.lastWork >= IDLE_RELEASE_MS
                ? 'idle'
                : null;
      if (!reason) continue;
      streaming.stopping = reason;
      sender.stopStream(h.id, streaming.gen);
    }
  }

  return { canStream, stream, check };
}

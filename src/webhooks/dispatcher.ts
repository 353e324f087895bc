// The webhook dispatcher: turns committed outbox events into deliveries and sends them, at least
// once and in event-id order per subscription. All of its state is in the database:
// - a subscription is leased (`lockedBy`, `lockedUntil`, taken by a conditional UPDATE) by one
//   instance at a time, which alone advances its cursor and sends its deliveries; a crashed
//   instance's lease runs out and another instance (or the restarted one) carries on from the rows.
//   The leases of everything an instance holds are renewed together, by one statement;
// - `cursor` is the last outbox id the subscription is done with: every matching event at or below
//   it was delivered or has a delivery row (pending, failed); it never passes the relay's final
//   position (tail.lastId), and only the lease holder moves it, guarded by its previous value (a
//   replay moves it back);
// - a delivery is recorded only after its outcome, so a crash between the request and that write
//   sends it again; its id (`webhook-id`) derives from the subscription and the event, so the
//   repeat carries the same id and receivers deduplicate on it.
// Two paths. The fast one, for a subscription with no pending row: its events come from the
// relay's recent events kept in memory (the outbox is read only to catch up from further back), are
// sent one at a time in id order, and the successes are written together, every FLUSH_MS, for all
// subscriptions at once (one insert of the delivery rows, one update of the cursors) instead of
// several statements per delivery. Once a subscription is up to date (every event after its
// position is in memory) its fast path runs as a stream in the sender thread: the relay's batches are
// posted there once for all streams, and the thread matches, signs and sends each subscription's
// events in order, the next request as soon as the previous answer is in, without a turn of this
// event loop in between; it reports the deliveries in batches (written here as above) and how far
// the subscription is done (where its cursor may move). The dispatcher keeps the lease, the cursor
// and the database, and stops the stream when the lease is lost, the subscription must take the
// slow path (a replay, a retry due, a failed write), its turn is over, or it is idle. The first
// failure (on the fast path, a stream's included) writes its pending row at once and moves the
// subscription to the slow path: delivery rows first (materialized from the outbox), then each
// attempt recorded on its row, as retries, redeliveries and replays need; once no row is pending
// it is back on the fast path.
// One request per subscription at a time (order) and WEBHOOK_CONCURRENCY subscriptions per
// instance, of which WEBHOOK_CONCURRENCY_PER_OWNER per account (a user and its service accounts),
// each request within WEBHOOK_TIMEOUT_MS: a slow or dead endpoint holds up only its own subscription,
// and one user's slow endpoints only that user's. The requests are signed and sent by a thread of their own (send-worker.ts), the
// HTTP client's CPU off the event loop that serves the API and the WebSockets; the dispatcher only
// listens to the relay (a nudge and a copy of the events), so WebSocket fan-out never waits for it.
// The parts: this file schedules (tick, serve) and wires the others; ./leases.ts takes, renews and
// lets go of leases and says whose turn is over; ./fast-path.ts sends a series at a time and writes
// the successes in batches; ./streams.ts runs an up-to-date subscription's fast path in the sender
// thread and stops it when it must end; ./slow-path.ts materializes pending rows and records each
// attempt; ./recent-events.ts keeps the relay's recent events for the fast path; ./held.ts is what
// they share;
// every read and write of delivery state goes through ./store/ (the DeliveryStore port).
import { randomUUID } from 'node:crypto';
import type { WebhookSubscription } from '../db/entities/WebhookSubscription.ts';
import type { PublishedEvent } from '../events/filter.ts';
import type { EventStore } from '../events/store.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';
import { createFastPath } from './fast-path.ts';
import { type DispatcherOptions, deliveryMeters, type Held, IDLE_RELEASE_MS } from './held.ts';
import { Leases } from './leases.ts';
import { RecentEvents } from './recent-events.ts';
import { createSendThread } from './send-thread.ts';
import { createSlowPath } from './slow-path.ts';
import type { DeliveryStore } from './store/index.ts';
import { createStreams } from './streams.ts';
import { subscriptionFilter, type WebhookService } from './subscriptions.ts';

/** How often the dispatcher looks for work without being nudged (retries coming due, other instances' leases). */
const POLL_MS = 250;
/** Unleased subscriptions are looked for at most this often (a nudge comes with every relay read). */
const CLAIM_EVERY_MS = 25;
/** Successful deliveries and cursors are written this often (together, for every subscription). */
const FLUSH_MS = 200;
/** Events of one subscription handed to the sender thread at once (sent in order, one at a time). */
const SEND_SERIES = 64;
export interface Dispatcher {
  /** There may be work: look now. */
  wake(): void;
  /**
   * A subscription changed through the API (secret, enabled): read it again before its next request.
   * `committed`, the subscription as its change committed (a rotation): its secrets sign this
   * instance's next request of it, before any later event is handed to the sender's thread.
   */
  changed(committed?: WebhookSubscription): void;
  /**
   * Writes the deliveries made so far (the fast path writes them in batches, every FLUSH_MS): with
   * `subscriptionId`, after waiting for that subscription's request in flight only.
   */
  flush(subscriptionId?: string): Promise<void>;
  /** The relay handed over events (kept for the fast path). */
  published(events: readonly PublishedEvent[]): void;
  stop(): Promise<void>;
}

export function createDispatcher(deps: {
  /** Delivery state: subscriptions' cursors and leases, delivery rows. */
  store: DeliveryStore;
  /** The outbox, read to catch up from further back than the relay's recent events. */
  events: EventStore;
  service: WebhookService;
  /** The relay's final position: no delivery is made of an id beyond it. */
  lastEventId: () => number;
  /** The relay's newest price update (OutboxTail `newestPriceUpdate`): where catch-up reads stop looking for one. */
  newestPriceUpdate: () => number;
  options: DispatcherOptions;
  logger: Logger;
  metrics: WebhookMetrics;
  userAgent: string;
  /** The user whose slots a subscription owner's take (a service account's owner; default itself). */
  accountOf?: (userId: string) => string | Promise<string>;
}): Dispatcher {
  const { store, options, logger, metrics } = deps;
  const accountOf = deps.accountOf ?? ((userId: string) => userId);
  const instance = randomUUID();
  // Requests are signed and sent by a thread of their own (send-worker.ts).
  const sender = createSendThread();
  const meters = deliveryMeters(metrics);
  const sendOptions = { ...options, userAgent: deps.userAgent };
  const held = new Map<string, Held>();
  const running = new Set<Promise<void>>();
  /** The relay's recent events, for the fast path. */
  const recent = new RecentEvents();
  /** Workers waiting for events or a nudge. */
  let waiters: (() => void)[] = [];
  let scheduled = false;
  let ticking = false;
  let stopped = false;
  let refreshNow = true;
  let refreshedAt = 0;
  /** Reads of the held subscriptions begun so far (`refresh`). */
  let reads = 0;
  /**
   * Subscriptions whose committed change `changed` applied, with the reads begun by then: a read among
   * those began before the change and must not put the previous secrets back.
   */
  const appliedDuring = new Map<string, number>();
  let claimedAt = 0;
  let claimTimer: NodeJS.Timeout | null = null;
  let contendedAt = 0;
  /**
   * Whether any enabled subscription exists (counted at most every POLL_MS, and at once after a local
   * change): with none, the relay's nudges (one per commit) cost nothing here. Another instance's new
   * subscription is seen at the next count.
   */
  let anySubscriptions = true;
  let countedAt = 0;
  /** Database work that must not interleave (writes of successes, refreshes of the held state). */
  let serial: Promise<unknown> = Promise.resolve();

  function inSeries<T>(work: () => Promise<T>): Promise<T> {
    const next = serial.then(work, work);
    serial = next.catch(() => undefined);
    return next;
  }

  function wake(): void {
    for (const resolve of waiters) resolve();
    waiters = [];
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void tick().catch((error: unknown) => logger.warn({ err: error }, 'webhook dispatch failed'));
    });
  }

  function waitForWork(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  const leases = new Leases({
    store,
    instance,
    // Longer than one attempt can take; renewed every POLL_MS for everything held.
    leaseMs: 2 * options.timeoutMs + 2000,
    concurrencyPerOwner: options.concurrencyPerOwner,
    accountOf,
    lastEventId: deps.lastEventId,
    held,
  });
  const slow = createSlowPath({
    store,
    events: deps.events,
    sender,
    instance,
    lastEventId: deps.lastEventId,
    newestPriceUpdate: deps.newestPriceUpdate,
    options,
    sendOptions,
    logger,
    metrics,
    observe: meters.observe,
    track,
  });
  const fast = createFastPath({
    store,
    events: deps.events,
    sender,
    instance,
    lastEventId: deps.lastEventId,
    newestPriceUpdate: deps.newestPriceUpdate,
    sendOptions,
    logger,
    metrics,
    meters,
    held,
    recent,
    slow,
    inSeries,
    writeFailed: () => streams.check(),
  });
  const streams = createStreams({
    sender,
    sendOptions,
    held,
    recent,
    fast,
    leases,
    meters,
    metrics,
    stopped: () => stopped,
  });

  const poll = setInterval(() => {
    streams.check();
    wake();
  }, POLL_MS);
  poll.unref();
  const flusher = setInterval(() => {
    if (fast.unwritten()) void fast.flush();
  }, FLUSH_MS);
  flusher.unref();

  function track(sub: WebhookSubscription, h?: Held, account = sub.owner.id): Held {
    const target = h ?? {
      id: sub.id,
      owner: sub.owner.id,
      account,
      url: sub.url,
      sealed: '',
      previousSecretExpiresAt: null,
      secrets: [],
      filter: subscriptionFilter(sub),
      mode: 'fast',
      confirmed: Number(sub.cursor),
      flushed: Number(sub.cursor),
      wantSlow: false,
      lost: false,
      sent: 0,
      lastWork: Date.now(),
      stream: null,
    };
    const expires = sub.previousSecretExpiresAt?.getTime() ?? null;
    // The signing keys change with a rotation, and the previous one stops signing when its overlap ends.
    const overlapEnded = expires !== null && expires <= Date.now() && target.secrets.length > 1;
    if (sub.secretsSealed !== target.sealed || expires !== target.previousSecretExpiresAt || overlapEnded) {
      target.secrets = deps.service.signingSecrets(sub);
      target.sealed = sub.secretsSealed;
      target.previousSecretExpiresAt = expires;
      if (target.stream) sender.streamSecrets(target.id, target.stream.gen, target.secrets);
    }
    return target;
  }

  async function tick(): Promise<void> {
    if (ticking || stopped) return;
    ticking = true;
    try {
      const now = Date.now();
      if (refreshNow || now - refreshedAt >= POLL_MS) {
        refreshNow = false;
        refreshedAt = now;
        await inSeries(refresh);
      }
      if (held.size === 0) {
        if (now - countedAt >= POLL_MS) {
          countedAt = now;
          anySubscriptions = await store.anyEnabled();
        }
        if (!anySubscriptions) return;
      }
      const free = options.concurrency - held.size;
      if (free <= 0) {
        if (now - contendedAt >= POLL_MS) {
          contendedAt = now;
          leases.contended = (await leases.waiting(1)).length > 0;
        }
        return;
      }
      leases.contended = false;
      if (now - claimedAt < CLAIM_EVERY_MS) {
        // Looked a moment ago: look again once the interval is over.
        if (!claimTimer)
          claimTimer = setTimeout(
            () => {
              claimTimer = null;
              wake();
            },
            CLAIM_EVERY_MS - (now - claimedAt),
          ).unref();
        return;
      }
      claimedAt = now;
      const candidates = await leases.waiting(free * 2);
      if (candidates.length === 0 || stopped) return;
      // Work ahead: the sender thread starts (~0.1 s) while the leases are taken.
      sender.warm();
      const accounts = await leases.claim(candidates, options.concurrency - held.size);
      const claimed = [...accounts.keys()];
      if (claimed.length === 0) return;
      const subs = await store.leased(instance, claimed);
      const withPending = await store.withPending(claimed);
      for (const sub of subs) {
        if (stopped) break;
        const h = track(sub, undefined, accounts.get(sub.id));
        if (withPending.has(sub.id)) h.mode = 'slow';
        held.set(h.id, h);
        const work = serve(h)
          .catch((error: unknown) => logger.warn({ err: error, webhook: h.id }, 'webhook delivery failed'))
          .finally(async () => {
            await release(h).catch(() => undefined);
            running.delete(work);
            wake();
          });
        running.add(work);
      }
    } finally {
      ticking = false;
    }
  }

  /** Renews every lease held, and reads the held subscriptions again (secrets, enabled, replays). */
  async function refresh(): Promise<void> {
    if (held.size === 0) return;
    const read = ++reads;
    await leases.renew();
    const rows = new Map((await store.leased(instance)).map((sub) => [sub.id, sub]));
    for (const h of held.values()) {
      const sub = rows.get(h.id);
      if (!sub?.enabled || sub.deletedAt) {
        h.lost = true;
        continue;
      }
      const applied = appliedDuring.get(h.id);
      if (applied === undefined || read > applied) {
        appliedDuring.delete(h.id);
        track(sub, h);
      }
      // A replay moved the cursor back (writes of this instance's cursors are in series with this read).
      if (h.mode === 'fast' && Number(sub.cursor) !== h.flushed) h.wantSlow = true;
    }
    streams.check();
  }

  /** Delivers what the subscription has, in order, until it runs dry, fails, or must let go. */
  async function serve(h: Held): Promise<void> {
    while (!stopped && !h.lost) {
      if (h.wantSlow && h.mode === 'fast') {
        await fast.flush();
        h.wantSlow = false;
        h.mode = 'slow';
      }
      if (h.mode === 'slow') {
        if (!(await slow.step(h))) return;
        continue;
      }
      if (leases.turnOver(h)) return;
      if (streams.canStream(h)) {
        // Up to date: the sender thread runs the fast path until it fails or is asked to stop.
        if ((await streams.stream(h)) === 'idle') return;
        continue;
      }
      const batch = await fast.next(h);
      if (batch.events.length === 0) {
        h.confirmed = Math.max(h.confirmed, batch.upTo);
        if (Date.now() - h.lastWork >= IDLE_RELEASE_MS) return;
        await waitForWork(POLL_MS);
        continue;
      }
      h.lastWork = Date.now();
      let all = true;
      for (let i = 0; i < batch.events.length; i += SEND_SERIES) {
        if (
          stopped ||
          h.lost ||
          h.wantSlow ||
          !(await fast.send(h, batch.events.slice(i, i + SEND_SERIES)))
        ) {
          all = false;
          break;
        }
      }
      if (all) h.confirmed = Math.max(h.confirmed, batch.upTo);
    }
  }

  /** Writes what was delivered, then lets the subscription go. */
  async function release(h: Held): Promise<void> {
    try {
      await fast.flush();
    } finally {
      held.delete(h.id);
      appliedDuring.delete(h.id);
      await leases.release(h.id);
    }
  }

  return {
    wake,
    async flush(subscriptionId) {
      // The sender thread's deliveries not reported yet first (a stream reports every few ms); 30.7:
      // of this subscription only, never behind other subscriptions' (other owners') slow receivers.
      await sender.sync(subscriptionId === undefined ? undefined : [subscriptionId]);
      await fast.flush();
    },
    changed(committed) {
      const h = committed && held.get(committed.id);
      if (h && committed.enabled && !committed.deletedAt) {
        track(committed, h);
        appliedDuring.set(h.id, reads);
      }
      refreshNow = true;
      countedAt = 0;
      // A subscription was made (or enabled): its first delivery need not wait for the thread's start.
      if (!stopped) sender.warm();
      wake();
    },
    published(events) {
      if (events.length === 0) return;
      // To the sender thread's streams (once for all of them).
      sender.events(recent.add(events));
      wake();
    },
    async stop() {
      stopped = true;
      clearInterval(poll);
      clearInterval(flusher);
      streams.check();
      wake();
      // In-flight requests end within their timeout; what succeeded is written, the rest stays for
      // the next holder (leases are let go, or lapse).
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((resolve) => setTimeout(resolve, options.timeoutMs).unref()),
      ]);
      await serial;
      await sender.close();
    },
  };
}

// Webhook delivery state (webhook_subscription: cursor, lease, status; webhook_delivery: one row per
// event and subscription) behind one port, with one adapter per database (./sqlite.ts,
// ./postgres.ts; the statements both share: ./shared.ts), held to the same cases by
// test/conformance/delivery-store.test.ts: the shape of the ledger's LedgerStore. The dispatcher
// (../dispatcher.ts) decides; the store only reads and writes, each write guarded by what the
// dispatcher last saw (the lease holder, the cursor it read, the row as its attempt read it).

import type { EventType } from '../../db/entities/OutboxEvent.ts';
import type { DeliveryStatus, WebhookDelivery } from '../../db/entities/WebhookDelivery.ts';
import type { WebhookStatus, WebhookSubscription } from '../../db/entities/WebhookSubscription.ts';
import type { WebhookBacklog } from '../../observability/metrics.ts';

/** A delivery row as written (the columns of webhook_delivery). */
export interface DeliveryRow {
  id: string;
  subscription: string;
  eventId: number;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  firstAttemptAt: Date | null;
  nextAttemptAt: Date;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

/** A subscription's cursor moving from where its holder last wrote it. */
export interface CursorMove {
  id: string;
  from: number;
  to: number;
}

/** An event past a cursor, as a pending delivery needs it. */
export interface MaterializedEvent {
  id: number;
  type: EventType;
  occurredAt: Date;
}

export interface DeliveryStore {
  /** Whether any enabled subscription exists. */
  anyEnabled(): Promise<boolean>;

  // Subscriptions waiting for an instance (the scheduler's reads).

  /**
   * Enabled, unleased (or with a lapsed lease) subscriptions whose cursor is below `lastEventId`,
   * other than those of `exceptOwners`: at most `limit` ids.
   */
  behind(query: {
    lastEventId: number;
    now: Date;
    limit: number;
    exceptOwners: readonly string[];
  }): Promise<string[]>;
  /** The owners, among `owners`, of an enabled, unleased subscription below `lastEventId`. */
  ownersBehind(owners: readonly string[], lastEventId: number, now: Date): Promise<string[]>;
  /** Subscriptions with a pending delivery due by `now` (from at most `limit` rows). */
  due(now: Date, limit: number): Promise<Set<string>>;
  /** Of `ids`, those with a pending delivery waiting for a retry after `now`. */
  retryLater(ids: readonly string[], now: Date): Promise<Set<string>>;
  /** Of `ids`, those with a pending delivery. */
  withPending(ids: readonly string[]): Promise<Set<string>>;

  // Leases.

  /**
   * Takes, in one transaction, the leases of up to `limit` of `candidates` that are enabled and
   * free, each until `until`, for `instance`; `admit` is asked for each free one in turn (its owner)
   * and answers the account whose slot it takes, or null to leave it. PostgreSQL locks the rows it
   * reads `FOR UPDATE SKIP LOCKED` (instances claiming at once take different ones); SQLite's one
   * writer needs no more. The leased ones, each with its account.
   */
  claim(
    candidates: readonly string[],
    lease: {
      instance: string;
      until: Date;
      limit: number;
      admit: (owner: string) => Promise<string | null>;
    },
  ): Promise<Map<string, string>>;
  /** The subscriptions `instance` holds: of `ids`, or all. */
  leased(instance: string, ids?: readonly string[]): Promise<WebhookSubscription[]>;
  /** Extends every lease `instance` holds until `until`. */
  renew(instance: string, until: Date): Promise<void>;
  /** Lets the subscription go, if `instance` holds it. */
  release(id: string, instance: string): Promise<void>;

  // The fast path.

  /**
   * The fast path's successes: each subscription's cursor moves (only where `instance` holds it and
   * it is where the move starts), and only the moved subscriptions' `rows` are written (a row of an
   * event already recorded is left as it is). Which subscriptions moved. SQLite writes in
   * transactions of about 256 rows, each cursor with its rows (a piece that fails moves none of its
   * own); PostgreSQL in one statement.
   */
  recordSuccesses(
    instance: string,
    moves: readonly CursorMove[],
    rows: readonly DeliveryRow[],
  ): Promise<Set<string>>;
  /**
   * The fast path's first failure: the cursor moves to the failed event and its pending row is
   * written, together, only if `instance` holds the subscription and the cursor is at `move.from`.
   * Whether it was written.
   */
  recordFirstFailure(instance: string, move: CursorMove, row: DeliveryRow): Promise<boolean>;

  // The slow path.

  /**
   * Adds a pending row (due `now`) for each of `events` the subscription has none for, and moves its
   * cursor from `from` to `to`, together, only if `instance` holds it and the cursor is at `from`.
   */
  materialize(
    subscription: string,
    instance: string,
    move: { from: number; to: number },
    events: readonly MaterializedEvent[],
    now: Date,
  ): Promise<void>;
  /** The subscription's pending delivery of the lowest event id. */
  nextPending(subscription: string): Promise<WebhookDelivery | null>;
  subscription(id: string): Promise<WebhookSubscription | null>;
  delivery(id: string): Promise<WebhookDelivery | null>;
  /**
   * Records on a delivery row what an attempt found, only if the row is as the attempt read it (its
   * `nextAttemptAt`: a redelivery or replay asked for meanwhile stands). Whether it was written.
   */
  recordAttempt(
    delivery: { id: string; nextAttemptAt?: Date },
    change: Partial<Omit<DeliveryRow, 'id' | 'subscription' | 'eventId' | 'eventType' | 'createdAt'>>,
  ): Promise<boolean>;
  /** A subscription's delivery status (active again, failing, or disabled). */
  setStatus(
    id: string,
    change: { status: WebhookStatus; failingSince: Date | null; enabled?: boolean },
  ): Promise<void>;

  /** The backlog gauges' reading: deliveries pending and failed, subscriptions and how far behind. */
  backlog(lastEventId: number): Promise<WebhookBacklog>;
}

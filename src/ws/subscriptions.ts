// The client messages of a connection: `ping`, `unsubscribe` and `subscribe` (with its optional
// resume point: checked, then replayed by the Replayer while live events are held). Per subscription,
// every matching event is delivered exactly once and in id order, across the replay/live hand-over:
// each subscription remembers the last id it sent and never sends an older one.

import type { Config } from '../config/index.ts';
import { EVENT_TYPES } from '../db/entities/OutboxEvent.ts';
import { formatAddress, parseAddress } from '../domain/ledger/addresses.ts';
import type { EventFilter } from '../events/filter.ts';
import type { OutboxTail } from '../events/tail.ts';
import type { Logger } from '../observability/logger.ts';
import type { Connection, Subscription } from './connection.ts';
import { type ClientMessage, ProtocolError } from './protocol.ts';
import type { Replayer, ReplaySink } from './replay.ts';

/** Suggested wait before retrying a subscribe that met an unavailable database (`retryAfterMs`). */
const RETRY_AFTER_MS = 2000;

/** A `subscribe` of either channel (`/assets/subscribe`'s names one wallet and one asset). */
type SubscribeMessage = Extract<ClientMessage, { type: 'subscribe' }>;

export interface SubscriptionsDeps {
  config: Config['ws'];
  logger: Logger;
  tail: OutboxTail;
  replayer: Replayer;
}

export class Subscriptions {
  private readonly deps: SubscriptionsDeps;

  constructor(deps: SubscriptionsDeps) {
    this.deps = deps;
  }

  /** Answers one client message; throws a ProtocolError the gateway sends as an `error`. */
  async handle(connection: Connection, message: ClientMessage): Promise<void> {
    const requestId = message.requestId ?? null;
    if (message.type === 'ping') {
      connection.message({ type: 'pong', requestId, serverTime: new Date().toISOString() });
      return;
    }
    if (message.type === 'unsubscribe') {
      if (!connection.subscriptions.delete(message.subscriptionId)) {
        throw new ProtocolError(
          'unknown_subscription',
          `No subscription ${message.subscriptionId} on this connection.`,
          requestId,
        );
      }
      connection.message({ type: 'unsubscribed', requestId, subscriptionId: message.subscriptionId });
      return;
    }
    await this.subscribe(connection, message, requestId);
  }

  private async subscribe(
    connection: Connection,
    message: SubscribeMessage,
    requestId: string | null,
  ): Promise<void> {
    if (connection.subscriptions.size >= this.deps.config.maxSubscriptionsPerConnection) {
      throw new ProtocolError(
        'too_many_subscriptions',
        `At most ${this.deps.config.maxSubscriptionsPerConnection} subscriptions per connection.`,
        requestId,
      );
    }
    const filter = filterOf(message, requestId);
    const subscription: Subscription = {
      // Ids only need to be unique within the connection (contract): numbering them makes the
      // frames of an event identical for every connection with one subscription, so the frame is
      // built once per event and the same bytes go to all of them.
      id: subscriptionId(++connection.subscriptionsMade),
      filter,
      lastSentId: this.deps.tail.lastId,
    };
    const { lastEventId } = message;
    const resumeFrom = lastEventId === undefined ? null : Number(lastEventId);

    if (lastEventId !== undefined && resumeFrom !== null) {
      let resync: Awaited<ReturnType<Replayer['check']>>;
      try {
        resync = await this.deps.replayer.check(resumeFrom);
      } catch (error) {
        this.deps.logger.warn({ err: error }, 'subscribe: the event store could not be read');
        throw unavailable('The event store could not be read; no subscription was made.', requestId);
      }
      if (resync) {
        connection.message({
          type: 'resync_required',
          requestId,
          subscriptionId: null,
          requestedEventId: lastEventId,
          oldestEventId: resync.oldestEventId === null ? null : String(resync.oldestEventId),
          reason: resync.reason,
          catchUp: resync.catchUp,
          detail: resync.detail,
        });
        return;
      }
      subscription.lastSentId = resumeFrom;
      connection.replaying += 1;
    }
    connection.subscriptions.set(subscription.id, subscription);
    connection.message({
      type: 'subscribed',
      requestId,
      subscriptionId: subscription.id,
      events: [...filter.types],
      filters: {
        walletId: filter.wallet === undefined ? null : formatAddress(filter.wallet),
        assetId: filter.assetId ?? null,
        collection: filter.collection ?? null,
      },
      replayFrom: lastEventId ?? null,
    });
    if (resumeFrom !== null) void this.replay(connection, subscription, requestId);
  }

  /** Replays the subscription's history, then `replayed`; live events are held until it ends. */
  private async replay(
    connection: Connection,
    subscription: Subscription,
    requestId: string | null,
  ): Promise<void> {
    const open = () => !connection.closed && connection.subscriptions.get(subscription.id) === subscription;
    const sink: ReplaySink = {
      open,
      write: (frames) => {
        // Same socket and order rules as live delivery (connection.ts).
        if (open() && connection.ws.readyState === connection.ws.OPEN) connection.write(frames);
      },
      drained: () => connection.drained(),
    };
    try {
      const { count, lastReplayed } = await this.deps.replayer.run(sink, subscription, {
        connection: String(connection.serial),
        key: connection.key,
        user: connection.user,
      });
      if (!open()) return;
      connection.message({
        type: 'replayed',
        subscriptionId: subscription.id,
        lastEventId: lastReplayed === null ? null : String(lastReplayed),
        count,
      });
    } catch (error) {
      // A replay stopped half-way must not be followed by live events (a gap): the subscription
      // ends here, and the client subscribes again from the last event it received.
      this.deps.logger.warn({ err: error }, 'event replay failed');
      if (open()) {
        connection.subscriptions.delete(subscription.id);
        const failure = unavailable(
          `The replay of ${subscription.id} could not read the event store; the subscription has ended. ` +
            'Subscribe again with lastEventId set to the last event received.',
          requestId,
          subscription.id,
        );
        connection.error(failure.code, failure.message, failure.requestId, failure.extra);
      }
    } finally {
      connection.replayEnded();
    }
  }
}

/** The subscription's filter; a malformed wallet address is an `invalid_filter` error. */
function filterOf(message: SubscribeMessage, requestId: string | null): EventFilter {
  let wallet: string | undefined;
  if (message.walletId !== undefined) {
    try {
      wallet = parseAddress(message.walletId, '/walletId');
    } catch (error) {
      throw new ProtocolError(
        'invalid_filter',
        error instanceof Error ? error.message : 'Invalid walletId.',
        requestId,
      );
    }
  }
  // `/assets/subscribe` names no event types and no collection: every type, any collection.
  const events = 'events' in message ? message.events : undefined;
  const collection = 'collection' in message ? message.collection : undefined;
  return { types: new Set(events ?? EVENT_TYPES), wallet, assetId: message.assetId, collection };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `sub_` and the number in 12 Crockford base32 digits (the contract's SubscriptionId). */
function subscriptionId(sequence: number): string {
  let digits = '';
  for (let rest = sequence; digits.length < 12; rest = Math.floor(rest / 32)) {
    digits = CROCKFORD[rest % 32] + digits;
  }
  return `sub_${digits}`;
}

/** The retryable error of a subscribe or replay that met an unavailable event store. */
function unavailable(message: string, requestId: string | null, subscriptionId?: string): ProtocolError {
  return new ProtocolError('unavailable', message, requestId, {
    retryAfterMs: RETRY_AFTER_MS,
    ...(subscriptionId === undefined ? {} : { subscriptionId }),
  });
}

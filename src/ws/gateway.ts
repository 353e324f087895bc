// The WebSocket gateway for /ws and /assets/subscribe (AsyncAPI contract). Each connection holds
// subscriptions; live events come from this instance's outbox tail, resumes replay from the outbox.
// Per subscription, every matching event is delivered exactly once and in id order, across the
// replay/live hand-over: each subscription remembers the last id it sent and never sends an older one.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { AuthContext } from '../auth/caller.ts';
import type { Config } from '../config/index.ts';
import { formatAddress, parseAddress } from '../domain/ledger/addresses.ts';
import { ALL_EVENT_TYPES, type EventFilter, matches, type PublishedEvent } from '../events/filter.ts';
import type { EventStore } from '../events/store.ts';
import type { OutboxTail } from '../events/tail.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { RedisLink } from '../redis/link.ts';
import { eventFrame } from './frames.ts';
import { type Admission, Handshake, refuse, shuttingDown } from './handshake.ts';
import {
  type Channel,
  type ClientMessage,
  type ErrorCode,
  type MessageParser,
  ProtocolError,
} from './protocol.ts';
import { Replayer, type ReplaySink, type ReplaySubscription } from './replay.ts';

export const CLOSE = {
  goingAway: 1001,
  policyViolation: 1008,
  messageTooBig: 1009,
  internalError: 1011,
  credentialsExpired: 4001,
  slowConsumer: 4008,
  tooManyConnections: 4029,
} as const;

/** Suggested wait before retrying a subscribe that met an unavailable database (`retryAfterMs`). */
const RETRY_AFTER_MS = 2000;
/** Live events held for a connection while one of its subscriptions replays. */
const MAX_HELD_EVENTS = 10_000;
/** Client messages: 10 per second with bursts of 20; flooding past twice that closes with 1008. */
const MESSAGE_RATE = 10;
const MESSAGE_BURST = 20;

export interface GatewayDeps {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  store: EventStore;
  tail: OutboxTail;
  parser: MessageParser;
  /** Credentials of an upgrade request (headers or a ticket); throws an AppError (401/403/429). */
  authenticate(request: IncomingMessage, url: URL): Promise<AuthContext>;
  /** Whether the credentials still hold (API key not revoked); checked at every heartbeat. */
  stillValid(auth: AuthContext): Promise<boolean>;
  /** Redis (REDIS_URL), for the connection cap across instances. */
  redis?: RedisLink;
}

type Subscription = ReplaySubscription;

interface Connection {
  ws: WebSocket;
  /** The connection's TCP socket: live events are written to it as ready-made frames (see `deliver`). */
  socket: Duplex;
  /** Numbers this connection's subscription ids (`sub_000000000001`, ...): unique within it. */
  subscriptionsMade: number;
  channel: Channel;
  auth: AuthContext;
  /** The API key (or user, without one) the connection counts against, and its user. */
  key: string;
  user: string;
  /** Numbers connections on this instance (replay slots are per connection). */
  serial: number;
  /** Client messages are handled one at a time, in arrival order (see `receive`). */
  queue: Promise<void>;
  subscriptions: Map<string, Subscription>;
  /** While > 0, live events wait in `held` so the connection sees replay before live. */
  replaying: number;
  held: PublishedEvent[];
  alive: boolean;
  closed: boolean;
  tokens: number;
  tokensAt: number;
  rejected: number;
}

export class Gateway {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<Connection>();
  private readonly handshake: Handshake;
  private readonly replayer: Replayer;
  private connectionsMade = 0;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly deps: GatewayDeps;
  private readonly unsubscribeTail: () => void;
  private closing = false;

  constructor(deps: GatewayDeps) {
    this.deps = deps;
    this.handshake = new Handshake(deps.config, deps.logger, deps.authenticate, deps.redis);
    this.replayer = new Replayer(deps.store, deps.tail, deps.config.ws);
    // Frames up to 4x the limit are read so the client gets a `message_too_large` error first;
    // larger ones are cut off by ws itself with 1009.
    // No compression: live events are written as ready-made frames (see `deliver`).
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: deps.config.ws.maxMessageBytes * 4,
      perMessageDeflate: false,
    });
    this.unsubscribeTail = deps.tail.onEvents((events) => this.dispatch(events));
    this.heartbeat = setInterval(() => void this.beat(), deps.config.ws.heartbeatMs);
    this.heartbeat.unref();
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Handles an HTTP upgrade on the server; answers plain HTTP errors for refused handshakes. */
  async handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (this.closing) {
      refuse(socket, shuttingDown());
      return;
    }
    const admission = await this.handshake.admit(request, socket);
    if (!admission) return;
    if (this.closing || socket.destroyed) {
      // Shut down, or the client left, while the checks waited.
      admission.release();
      refuse(socket, shuttingDown());
      return;
    }
    // The reservation is given back when the connection closes, or here if the handshake never completes.
    let accepted = false;
    const abandoned = () => {
      if (!accepted) admission.release();
    };
    socket.once('close', abandoned);
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      accepted = true;
      socket.off('close', abandoned);
      this.accept(ws, socket, admission);
    });
  }

  /** Graceful shutdown: tell every client to reconnect elsewhere (1001) and resume. */
  close(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
    this.unsubscribeTail();
    for (const connection of this.connections) this.end(connection, CLOSE.goingAway, 'server shutting down');
    this.wss.close();
    void this.handshake.close();
  }

  private accept(ws: WebSocket, socket: Duplex, { channel, auth, key, release }: Admission): void {
    const connection: Connection = {
      ws,
      socket,
      subscriptionsMade: 0,
      channel,
      auth,
      key,
      user: auth.userId,
      serial: ++this.connectionsMade,
      queue: Promise.resolve(),
      subscriptions: new Map(),
      replaying: 0,
      held: [],
      alive: true,
      closed: false,
      tokens: MESSAGE_BURST,
      tokensAt: Date.now(),
      rejected: 0,
    };
    this.connections.add(connection);
    this.deps.metrics.wsConnections.inc();
    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('message', (data, isBinary) => this.receive(connection, data as Buffer, isBinary));
    ws.on('close', () => {
      connection.closed = true;
      this.connections.delete(connection);
      release();
      this.deps.metrics.wsConnections.dec();
    });
    ws.on('error', (error) => this.deps.logger.debug({ err: error }, 'websocket error'));
  }

  private receive(connection: Connection, data: Buffer, isBinary: boolean): void {
    if (data.length > this.deps.config.ws.maxMessageBytes) {
      this.error(
        connection,
        'message_too_large',
        `Messages are limited to ${this.deps.config.ws.maxMessageBytes} bytes; this one has ${data.length}.`,
        null,
      );
      this.end(connection, CLOSE.messageTooBig, 'message too large');
      return;
    }
    if (!this.takeToken(connection)) return;
    // One message at a time: answers keep the order of the requests, and the checks of a subscribe
    // (subscription limit, resume point), which wait on the database, cannot interleave with
    // another subscribe's. A replay runs on its own, so it never holds up later messages.
    connection.queue = connection.queue.then(() => this.process(connection, data, isBinary));
  }

  private async process(connection: Connection, data: Buffer, isBinary: boolean): Promise<void> {
    if (connection.closed) return;
    try {
      if (isBinary) throw new ProtocolError('invalid_message', 'Messages are JSON text frames.');
      const message = this.deps.parser.parse(connection.channel, data.toString('utf8'));
      await this.handle(connection, message);
    } catch (error) {
      if (error instanceof ProtocolError) {
        this.error(connection, error.code, error.message, error.requestId, error.extra);
      } else {
        this.deps.logger.error({ err: error }, 'websocket message failed');
        this.error(connection, 'invalid_message', 'The message could not be processed.', null);
      }
    }
  }

  private takeToken(connection: Connection): boolean {
    const now = Date.now();
    connection.tokens = Math.min(
      MESSAGE_BURST,
      connection.tokens + ((now - connection.tokensAt) / 1000) * MESSAGE_RATE,
    );
    connection.tokensAt = now;
    if (connection.tokens >= 1) {
      connection.tokens -= 1;
      connection.rejected = 0;
      return true;
    }
    connection.rejected += 1;
    if (connection.rejected > MESSAGE_BURST * 2) {
      this.end(connection, CLOSE.policyViolation, 'message rate limit exceeded');
    } else {
      this.error(
        connection,
        'rate_limited',
        `At most ${MESSAGE_RATE} messages per second (bursts of ${MESSAGE_BURST}).`,
        null,
      );
    }
    return false;
  }

  private async handle(connection: Connection, message: ClientMessage): Promise<void> {
    const requestId = message.requestId ?? null;
    if (message.type === 'ping') {
      this.send(
        connection,
        JSON.stringify({ type: 'pong', requestId, serverTime: new Date().toISOString() }),
      );
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
      this.send(
        connection,
        JSON.stringify({ type: 'unsubscribed', requestId, subscriptionId: message.subscriptionId }),
      );
      return;
    }
    await this.subscribe(connection, message, requestId);
  }

  private async subscribe(
    connection: Connection,
    message: Extract<ClientMessage, { type: 'subscribe' }>,
    requestId: string | null,
  ): Promise<void> {
    if (connection.subscriptions.size >= this.deps.config.ws.maxSubscriptionsPerConnection) {
      throw new ProtocolError(
        'too_many_subscriptions',
        `At most ${this.deps.config.ws.maxSubscriptionsPerConnection} subscriptions per connection.`,
        requestId,
      );
    }
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
    const filter: EventFilter = {
      types: new Set(message.events ?? ALL_EVENT_TYPES),
      wallet,
      assetId: message.assetId,
      collection: message.collection,
    };
    const subscription: Subscription = {
      // Ids only need to be unique within the connection (contract): numbering them makes the
      // frames of an event identical for every connection with one subscription, so the frame is
      // built once per event and the same bytes go to all of them.
      id: subscriptionId(++connection.subscriptionsMade),
      filter,
      lastSentId: this.deps.tail.lastId,
    };
    const resumeFrom = message.lastEventId === undefined ? null : Number(message.lastEventId);

    if (resumeFrom !== null) {
      let resync: Awaited<ReturnType<Replayer['check']>>;
      try {
        resync = await this.replayer.check(resumeFrom);
      } catch (error) {
        this.deps.logger.warn({ err: error }, 'subscribe: the event store could not be read');
        throw unavailable('The event store could not be read; no subscription was made.', requestId);
      }
      if (resync) {
        this.send(
          connection,
          JSON.stringify({
            type: 'resync_required',
            requestId,
            subscriptionId: null,
            requestedEventId: message.lastEventId,
            oldestEventId: resync.oldestEventId === null ? null : String(resync.oldestEventId),
            reason: resync.reason,
            catchUp: resync.catchUp,
            detail: resync.detail,
          }),
        );
        return;
      }
      subscription.lastSentId = resumeFrom;
      connection.replaying += 1;
    }
    connection.subscriptions.set(subscription.id, subscription);
    this.send(
      connection,
      JSON.stringify({
        type: 'subscribed',
        requestId,
        subscriptionId: subscription.id,
        events: [...filter.types],
        filters: {
          walletId: wallet === undefined ? null : formatAddress(wallet),
          assetId: filter.assetId ?? null,
          collection: filter.collection ?? null,
        },
        replayFrom: message.lastEventId ?? null,
      }),
    );
    if (resumeFrom !== null) void this.replay(connection, subscription, requestId);
  }

  private async replay(
    connection: Connection,
    subscription: Subscription,
    requestId: string | null,
  ): Promise<void> {
    const open = () => !connection.closed && connection.subscriptions.get(subscription.id) === subscription;
    const sink: ReplaySink = {
      open,
      write: (frames) => {
        if (!open() || connection.ws.readyState !== connection.ws.OPEN) return;
        // Same socket and order rules as live delivery (see `deliver`).
        const { socket } = connection;
        socket.cork();
        for (const frame of frames) socket.write(frame);
        socket.uncork();
      },
      drained: () => this.drained(connection),
    };
    try {
      const { count, lastReplayed } = await this.replayer.run(sink, subscription, {
        connection: String(connection.serial),
        key: connection.key,
        user: connection.user,
      });
      if (!open()) return;
      this.send(
        connection,
        JSON.stringify({
          type: 'replayed',
          subscriptionId: subscription.id,
          lastEventId: lastReplayed === null ? null : String(lastReplayed),
          count,
        }),
      );
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
        this.error(connection, failure.code, failure.message, failure.requestId, failure.extra);
      }
    } finally {
      connection.replaying -= 1;
      if (connection.replaying === 0 && connection.held.length > 0) {
        const held = connection.held;
        connection.held = [];
        this.deliver(connection, held);
      }
    }
  }

  private dispatch(events: readonly PublishedEvent[]): void {
    for (const connection of this.connections) {
      if (connection.closed || connection.subscriptions.size === 0) continue;
      if (connection.replaying > 0) {
        for (const event of events) connection.held.push(event);
        if (connection.held.length > MAX_HELD_EVENTS)
          this.end(connection, CLOSE.slowConsumer, 'slow consumer: resume with lastEventId');
        continue;
      }
      this.deliver(connection, events);
    }
  }

  /**
   * Sends the connection the events its subscriptions match, one WebSocket message per event, in id
   * order. Each message is a complete frame built once per event (the same bytes for every
   * connection whose matching subscription ids are the same), and a batch goes out in one write.
   * Frames are written to the connection's socket directly: ws writes its own frames (answers,
   * pings, replays, close) synchronously to the same socket (no compression is negotiated), so the
   * order of everything sent on a connection is the order of the calls.
   */
  private deliver(connection: Connection, events: readonly PublishedEvent[]): void {
    const { ws, socket } = connection;
    if (connection.closed || ws.readyState !== ws.OPEN) return;
    let first: Buffer | null = null;
    let batch: Buffer[] | null = null;
    for (const event of events) {
      // The matching subscription ids as the inside of a JSON array (ids need no escaping).
      let ids: string | null = null;
      for (const subscription of connection.subscriptions.values()) {
        if (event.id <= subscription.lastSentId || !matches(event, subscription.filter)) continue;
        subscription.lastSentId = event.id;
        ids = ids === null ? subscription.id : `${ids}","${subscription.id}`;
      }
      if (ids === null) continue;
      const frame = eventFrame(event, ids);
      if (first === null) first = frame;
      else if (batch === null) batch = [first, frame];
      else batch.push(frame);
    }
    if (first === null) return;
    if (ws.bufferedAmount > this.deps.config.ws.maxBufferedBytes) {
      this.end(connection, CLOSE.slowConsumer, 'slow consumer: resume with lastEventId');
      return;
    }
    if (batch === null) {
      socket.write(first);
      return;
    }
    socket.cork();
    for (const frame of batch) socket.write(frame);
    socket.uncork();
  }

  /**
   * Resolves at once unless the connection's socket holds more than its high-water mark (16 KiB,
   * below WS_MAX_BUFFERED_BYTES' minimum), else once it drained, or closed. A client that takes
   * nothing for a heartbeat interval is a slow consumer.
   */
  private drained(connection: Connection): Promise<void> {
    const { socket } = connection;
    if (connection.closed || !(socket as Duplex & { writableNeedDrain: boolean }).writableNeedDrain)
      return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.end(connection, CLOSE.slowConsumer, 'slow consumer: resume with lastEventId');
        done();
      }, this.deps.config.ws.heartbeatMs);
      socket.once('drain', done);
      socket.once('close', done);
    });
  }

  private send(connection: Connection, frame: string): void {
    if (connection.closed) return;
    if (connection.ws.bufferedAmount > this.deps.config.ws.maxBufferedBytes) {
      this.end(connection, CLOSE.slowConsumer, 'slow consumer: resume with lastEventId');
      return;
    }
    connection.ws.send(frame);
  }

  private error(
    connection: Connection,
    code: ErrorCode,
    message: string,
    requestId: string | null,
    extra: Record<string, unknown> = {},
  ): void {
    this.send(connection, JSON.stringify({ type: 'error', requestId, code, message, ...extra }));
  }

  /** Stops sending on the connection (nothing after the close frame) and closes it. */
  private end(connection: Connection, code: number, reason: string): void {
    if (connection.closed) return;
    connection.closed = true;
    connection.held = [];
    connection.ws.close(code, reason);
  }

  private async beat(): Promise<void> {
    const now = Date.now() / 1000;
    // One check per API key and beat, however many connections the key holds.
    const checks = new Map<string, Promise<boolean>>();
    const verdicts: Promise<void>[] = [];
    for (const connection of this.connections) {
      // A connection being closed gets no ping; ws ends its close handshake (or times it out).
      if (connection.closed) continue;
      if (!connection.alive) {
        connection.ws.terminate();
        continue;
      }
      connection.alive = false;
      connection.ws.ping();
      if (connection.auth.expiresAt <= now) {
        this.end(connection, CLOSE.credentialsExpired, 'access token expired');
        continue;
      }
      let check = checks.get(connection.key);
      if (!check) {
        // A failed check (database down) keeps the connection: the next beat asks again.
        check = this.deps.stillValid(connection.auth).catch(() => true);
        checks.set(connection.key, check);
      }
      verdicts.push(
        check.then((valid) => {
          if (!valid) this.end(connection, CLOSE.credentialsExpired, 'credentials revoked');
        }),
      );
    }
    await Promise.all(verdicts);
  }
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

// One WebSocket connection and everything written to it: answers, errors, live event frames (built
// once per event, written straight to the socket) and the backpressure rules that end a slow
// consumer. ws writes its own frames (answers, pings, replays, close) synchronously to the same
// socket (no compression is negotiated), so the order of everything sent on a connection is the
// order of the calls.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { AuthContext } from '../auth/caller.ts';
import { matches, type PublishedEvent } from '../events/filter.ts';
import { eventFrame } from './frames.ts';
import { MessageRate } from './message-rate.ts';
import type { Channel, ErrorCode, ErrorExtra, ServerMessage } from './protocol.ts';
import type { ReplaySubscription } from './replay.ts';

export const CLOSE = {
  goingAway: 1001,
  policyViolation: 1008,
  messageTooBig: 1009,
  internalError: 1011,
  credentialsExpired: 4001,
  slowConsumer: 4008,
  tooManyConnections: 4029,
} as const;

/** Live events held for a connection while one of its subscriptions replays. */
const MAX_HELD_EVENTS = 10_000;
const SLOW_CONSUMER = 'slow consumer: resume with lastEventId';

export type Subscription = ReplaySubscription;

export interface ConnectionLimits {
  /** Bytes ws may hold unsent before the connection is closed as a slow consumer (4008). */
  maxBufferedBytes: number;
  /** How long a replay waits for the socket to drain before the connection is a slow consumer. */
  heartbeatMs: number;
}

export class Connection {
  readonly ws: WebSocket;
  /** The connection's TCP socket: live events are written to it as ready-made frames (see `deliver`). */
  readonly socket: Duplex;
  readonly channel: Channel;
  readonly auth: AuthContext;
  /** The API key (or user, without one) the connection counts against, and the user whose limits it uses (a service account's owner). */
  readonly key: string;
  readonly user: string;
  /** Numbers connections on this instance (replay slots are per connection). */
  readonly serial: number;
  /** Numbers this connection's subscription ids (`sub_000000000001`, ...): unique within it. */
  subscriptionsMade = 0;
  /** How many client messages the connection may still send (see Gateway `receive`). */
  readonly rate = new MessageRate();
  /** Client messages are handled one at a time, in arrival order (see Gateway `receive`). */
  queue: Promise<void> = Promise.resolve();
  readonly subscriptions = new Map<string, Subscription>();
  /** While > 0, live events wait in `held` so the connection sees replay before live. */
  replaying = 0;
  held: PublishedEvent[] = [];
  /** Answered the last ping (see heartbeat.ts). */
  alive = true;
  closed = false;
  private readonly limits: ConnectionLimits;

  constructor(
    ws: WebSocket,
    socket: Duplex,
    admission: { channel: Channel; auth: AuthContext; key: string },
    serial: number,
    limits: ConnectionLimits,
  ) {
    this.ws = ws;
    this.socket = socket;
    this.channel = admission.channel;
    this.auth = admission.auth;
    this.key = admission.key;
    this.user = admission.auth.account ?? admission.auth.userId;
    this.serial = serial;
    this.limits = limits;
  }

  /** Sends one JSON message, unless the connection ended or holds too much unsent (then it ends). */
  send(frame: string): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.end(CLOSE.slowConsumer, SLOW_CONSUMER);
      return;
    }
    this.ws.send(frame);
  }

  /** Sends one message of the contract (the AsyncAPI-generated models) as JSON. */
  message(message: ServerMessage): void {
    this.send(JSON.stringify(message));
  }

  error(code: ErrorCode, message: string, requestId: string | null, extra: ErrorExtra = {}): void {
    this.message({ type: 'error', requestId, code, message, ...extra });
  }

  /** Stops sending on the connection (nothing after the close frame) and closes it. */
  end(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.held = [];
    this.ws.close(code, reason);
  }

  /** Live events from the relay: delivered now, or held while a replay runs. */
  offer(events: readonly PublishedEvent[]): void {
    if (this.closed || this.subscriptions.size === 0) return;
    if (this.replaying > 0) {
      for (const event of events) this.held.push(event);
      if (this.held.length > MAX_HELD_EVENTS) this.end(CLOSE.slowConsumer, SLOW_CONSUMER);
      return;
    }
    this.deliver(events);
  }

  /** A replay ended: the live events held meanwhile go out once no replay runs. */
  replayEnded(): void {
    this.replaying -= 1;
    if (this.replaying === 0 && this.held.length > 0) {
      const held = this.held;
      this.held = [];
      this.deliver(held);
    }
  }

  /**
   * Sends the events its subscriptions match, one WebSocket message per event, in id order. Each
   * message is a complete frame built once per event (the same bytes for every connection whose
   * matching subscription ids are the same), and a batch goes out in one write.
   */
  deliver(events: readonly PublishedEvent[]): void {
    const { ws, socket } = this;
    if (this.closed || ws.readyState !== ws.OPEN) return;
    let first: Buffer | null = null;
    let batch: Buffer[] | null = null;
    for (const event of events) {
      // The matching subscription ids as the inside of a JSON array (ids need no escaping).
      let ids: string | null = null;
      for (const subscription of this.subscriptions.values()) {
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
    if (ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.end(CLOSE.slowConsumer, SLOW_CONSUMER);
      return;
    }
    if (batch === null) {
      socket.write(first);
      return;
    }
    this.write(batch);
  }

  /** Writes ready-made frames in one go (replay pages use it too). */
  write(frames: readonly Buffer[]): void {
    const { socket } = this;
    socket.cork();
    for (const frame of frames) socket.write(frame);
    socket.uncork();
  }

  /**
   * Resolves at once unless the socket holds more than its high-water mark (16 KiB, below
   * WS_MAX_BUFFERED_BYTES' minimum), else once it drained, or closed. A client that takes nothing
   * for a heartbeat interval is a slow consumer.
   */
  drained(): Promise<void> {
    const { socket } = this;
    if (this.closed || !(socket as Duplex & { writableNeedDrain: boolean }).writableNeedDrain)
      return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.end(CLOSE.slowConsumer, SLOW_CONSUMER);
        done();
      }, this.limits.heartbeatMs);
      socket.once('drain', done);
      socket.once('close', done);
    });
  }
}

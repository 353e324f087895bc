// The events client: one subscription on `/ws` that delivers every matching event once and in id
// order, whatever happens to the connection. It connects with a single-use ticket (browsers) or
// with headers (Node, through the `./node` entry), subscribes with its filters and, after any
// disconnection (a restart, a kill, a network drop, a silent half-open socket found by its
// heartbeat), reconnects with jittered exponential back-off and resubscribes with `lastEventId`
// set to the last event it took. `resync_required` becomes a REST catch-up over the event log
// (too far back) or a call to `onResync` (events removed or undone by a restore: the caller reloads
// its state), and the stream goes on. Events already taken (a replay overlapping a catch-up, say)
// are dropped by id, so the handler sees each one once.
import type {
  ErrorMessage,
  EventsClientMessage,
  EventsServerMessage,
  ResyncRequiredMessage,
} from '../../../generated/asyncapi/models/index.ts';
import { backoffDelay, sleep } from './backoff.ts';
import { type EventFilters, type GatsEvent, readEvents } from './event-log.ts';
import { unwrap } from './problem.ts';
import type { GatsClient } from './rest.ts';

export type StreamState = 'connecting' | 'live' | 'catching-up' | 'offline' | 'closed';

/** What the client needs of a WebSocket: the browser's, Node's global one, or `ws`'s. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  // biome-ignore lint/suspicious/noExplicitAny: the DOM's and ws's listener types differ; both fit this.
  addEventListener(type: string, listener: (event: any) => void): void;
}

/** Opens a WebSocket; `headers` is given only in headers mode (which a browser cannot do). */
export type WebSocketFactory = (url: string, headers?: Record<string, string>) => WebSocketLike;

export interface EventStreamOptions extends EventFilters {
  client: GatsClient;
  /** Called once per event, in id order; the next waits for the promise it returns. */
  onEvent: (event: GatsEvent) => void | Promise<void>;
  /** Resume after this id (the last event the caller handled, kept across runs). Default: from now. */
  lastEventId?: string;
  onState?: (state: StreamState) => void;
  /**
   * The events since the last one taken cannot be had (`pruned`: removed by retention or undone by
   * a restore from a backup; `not_yet`): reload the state you keep. Awaited; the stream then goes on
   * from the newest event as it was before this call.
   */
  onResync?: (message: ResyncRequiredMessage) => void | Promise<void>;
  /** Errors the stream goes on after (a failed ticket, a handler that threw, a refused subscribe). */
  onError?: (error: unknown) => void;
  /** Every message the service sends, as received (logging, contract checks). */
  onFrame?: (message: EventsServerMessage) => void;
  /** `ticket` (default; works in browsers) or `headers` (needs a factory that sends them: `./node`). */
  auth?: 'ticket' | 'headers';
  /** Default: the global WebSocket (browsers, Node 24). */
  webSocket?: WebSocketFactory;
  /** An application `ping` is sent this often (default 15 s). */
  pingIntervalMs?: number;
  /** With nothing received for this long the connection is taken as dead and replaced (default 35 s). */
  idleTimeoutMs?: number;
  /** Reconnection back-off: first wait and longest wait (default 500 ms and 30 s), jittered. */
  reconnect?: { baseDelayMs?: number; maxDelayMs?: number };
}

/** Why a connection ended, as the run loop needs it. */
interface Ended {
  /** It got as far as `subscribed`: the back-off starts over. */
  subscribed: boolean;
  /** Wait at least this long before the next connection. */
  waitMs?: number;
  resync?: ResyncRequiredMessage;
  /** A refusal that another try would meet again (the filters are invalid). */
  fatal?: Error;
}

/** An `error` message whose code says the client is at fault: trying again cannot help. */
const FATAL_CODES = new Set<ErrorMessage['code']>(['invalid_message', 'invalid_filter', 'unknown_type']);

export class EventStream {
  private readonly options: EventStreamOptions;
  private readonly stopper = new AbortController();
  private running: Promise<void> | undefined;
  private socket: WebSocketLike | undefined;
  /** The id of the last event taken (queued for the handler): the resume point. */
  private taken: bigint | undefined;
  private delivering: Promise<void> = Promise.resolve();
  private lastDelivered: string | undefined;
  private current: StreamState = 'offline';

  constructor(options: EventStreamOptions) {
    this.options = options;
    if (options.lastEventId !== undefined) {
      this.taken = BigInt(options.lastEventId);
      this.lastDelivered = options.lastEventId;
    }
  }

  get state(): StreamState {
    return this.current;
  }

  /** The id of the last event handed to `onEvent` (keep it to resume a later run). */
  get position(): string | undefined {
    return this.lastDelivered;
  }

  /** Starts the stream (once); it runs until stop(). */
  start(): this {
    this.running ??= this.run();
    return this;
  }

  /** Closes the connection, lets the handler finish the events already taken, and ends the stream. */
  async stop(): Promise<void> {
    this.stopper.abort(new Error('stopped'));
    this.socket?.close(1000, 'client stopped');
    await this.running;
    await this.delivering;
  }

  private get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  private setState(state: StreamState): void {
    if (state === this.current) return;
    this.current = state;
    this.options.onState?.(state);
  }

  private report(error: unknown): void {
    if (!this.stopped) this.options.onError?.(error);
  }

  private async run(): Promise<void> {
    const { baseDelayMs = 500, maxDelayMs = 30_000 } = this.options.reconnect ?? {};
    let failures = 0;
    while (!this.stopped) {
      this.setState('connecting');
      let ended: Ended;
      try {
        // Without a resume point a disconnection could lose events: start from the newest one.
        if (this.taken === undefined) this.taken = await this.newestEventId();
        ended = await this.connectOnce();
        if (ended.resync) await this.resync(ended.resync);
      } catch (error) {
        this.report(error);
        ended = { subscribed: false };
      }
      if (this.stopped) break;
      if (ended.fatal) {
        this.report(ended.fatal);
        break;
      }
      failures = ended.subscribed || ended.resync ? 0 : failures + 1;
      // After a resync the stream connects again at once; after anything else it waits, jittered
      // even the first time, so the clients of a restarted instance do not all come back at once.
      if (ended.resync) continue;
      this.setState('offline');
      const wait = Math.max(ended.waitMs ?? 0, backoffDelay(failures + 1, baseDelayMs, maxDelayMs));
      await sleep(wait, this.stopper.signal).catch(() => undefined);
    }
    this.setState('closed');
  }

  /** Hands an event to the handler unless it was taken before; the handler sees events one at a time. */
  private take(event: GatsEvent): void {
    const id = BigInt(event.id);
    if (this.taken !== undefined && id <= this.taken) return;
    this.taken = id;
    this.delivering = this.delivering.then(async () => {
      try {
        await this.options.onEvent(event);
      } catch (error) {
        this.report(error);
      }
      this.lastDelivered = event.id;
    });
  }

  /** One connection, from the handshake to its end. */
  private async connectOnce(): Promise<Ended> {
    const { client } = this.options;
    const factory = this.options.webSocket ?? ((url: string) => new WebSocket(url));
    let socket: WebSocketLike;
    if (this.options.auth === 'headers') {
      const url = `${client.baseUrl.replace(/^http/, 'ws')}/ws`;
      socket = factory(url, await client.authHeaders());
    } else {
      const ticket = await unwrap(
        client.POST('/api/v1/events/ws-ticket', { body: {}, signal: this.stopper.signal }),
      );
      socket = factory(ticket.url);
    }
    if (this.stopped) {
      socket.close(1000, 'client stopped');
      return { subscribed: false };
    }
    this.socket = socket;
    const pingMs = this.options.pingIntervalMs ?? 15_000;
    const idleMs = this.options.idleTimeoutMs ?? 35_000;

    return new Promise<Ended>((resolve) => {
      let subscribed = false;
      let lastFrameAt = Date.now();
      let done = false;
      const finish = (ended: Ended, close?: { code: number; reason: string }) => {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        this.socket = undefined;
        if (close) socket.close(close.code, close.reason);
        resolve(ended);
      };
      const send = (message: EventsClientMessage) => {
        if (socket.readyState === 1) socket.send(JSON.stringify(message));
      };
      const subscribe = () => {
        const { events, walletId, assetId, collection } = this.options;
        send({
          type: 'subscribe',
          requestId: 'gats-client',
          ...(events ? { events } : {}),
          ...(walletId ? { walletId } : {}),
          ...(assetId ? { assetId } : {}),
          ...(collection ? { collection } : {}),
          ...(this.taken === undefined ? {} : { lastEventId: String(this.taken) }),
        });
      };
      // The heartbeat: a browser cannot see the service's protocol pings, so the client sends its
      // own `ping`; a connection that brings nothing (no event, no pong) for idleMs is replaced.
      // A subscribe left unanswered (pongs alone would keep the connection) is as silent.
      const openedAt = Date.now();
      const heartbeat = setInterval(
        () => {
          const now = Date.now();
          if (now - lastFrameAt > idleMs || (!subscribed && now - openedAt > idleMs)) {
            finish({ subscribed }, { code: 4000, reason: 'no message within the idle timeout' });
            return;
          }
          send({ type: 'ping' });
        },
        Math.min(pingMs, idleMs),
      );

      socket.addEventListener('open', () => {
        lastFrameAt = Date.now();
        subscribe();
      });
      // A failed handshake (the service down, say) is followed by `close`, which ends the
      // connection; with `ws` an `error` nobody listens to would also throw out of the process.
      socket.addEventListener('error', () => {});
      socket.addEventListener('close', (event: { code?: number }) => {
        // 1008: the service saw a flood from this client; it asks for 10 s.
        finish({ subscribed, waitMs: event.code === 1008 ? 10_000 : undefined });
      });
      socket.addEventListener('message', (event: { data: unknown }) => {
        if (done) return;
        lastFrameAt = Date.now();
        let message: EventsServerMessage;
        try {
          message = JSON.parse(String(event.data)) as EventsServerMessage;
        } catch (error) {
          this.report(error);
          return;
        }
        this.options.onFrame?.(message);
        switch (message.type) {
          case 'subscribed':
            subscribed = true;
            this.setState(message.replayFrom === null ? 'live' : 'catching-up');
            break;
          case 'replayed':
            this.setState('live');
            break;
          case 'resync_required':
            finish({ subscribed, resync: message }, { code: 1000, reason: 'resync' });
            break;
          case 'error':
            if (FATAL_CODES.has(message.code)) {
              finish(
                { subscribed, fatal: new Error(`subscribe refused (${message.code}): ${message.message}`) },
                { code: 1000, reason: 'refused' },
              );
            } else if (!subscribed || message.subscriptionId !== undefined) {
              // The subscribe was refused for now (`unavailable`, `rate_limited`…) or the replay of
              // the subscription ended: no subscription exists; connect again and resubscribe.
              this.report(new Error(`${message.code}: ${message.message}`));
              finish({ subscribed: false, waitMs: message.retryAfterMs }, { code: 1000, reason: 'retry' });
            }
            break;
          case 'pong':
          case 'unsubscribed':
            break;
          default:
            // An event (it names its subscriptions); a message type of a later version is ignored.
            if ('subscriptionIds' in message && typeof message.id === 'string') this.take(message);
        }
      });
    });
  }

  /**
   * After `resync_required`: too far back, the missed events are read over REST, then the stream
   * subscribes from the last one; otherwise the events since cannot be had: the newest id is noted
   * first, then the caller reloads its state (onResync), then the stream goes on from that id (an
   * event in between is delivered, never lost).
   */
  private async resync(message: ResyncRequiredMessage): Promise<void> {
    this.setState('catching-up');
    if (message.reason === 'too_far_back') {
      const { events, walletId, assetId, collection } = this.options;
      const after = this.taken === undefined ? message.requestedEventId : String(this.taken);
      for await (const event of readEvents(this.options.client, {
        events,
        walletId,
        assetId,
        collection,
        after,
        signal: this.stopper.signal,
      })) {
        this.take(event);
        if (this.stopped) break;
      }
      // Catching up at the handler's pace: a flood is not read faster than it is handled.
      await this.delivering;
    } else {
      const newest = await this.newestEventId();
      await this.options.onResync?.(message);
      this.taken = newest;
    }
  }

  /**
   * The id of the newest committed event, from the event log's `newestEventId` (one small read): a
   * stream that goes on from it misses nothing. (A search over `after` would meet ids a restore
   * from a backup undid, which answer 410.)
   */
  private async newestEventId(): Promise<bigint> {
    const page = await unwrap(
      this.options.client.GET('/api/v1/events', {
        params: { query: { limit: 1 } },
        signal: this.stopper.signal,
      }),
    );
    return page.newestEventId === null ? 0n : BigInt(page.newestEventId);
  }
}

/** Creates and starts an events client. */
export function streamEvents(options: EventStreamOptions): EventStream {
  return new EventStream(options).start();
}

// The live event stream: one WebSocket to /ws, authenticated by a single-use ticket, carrying the
// subscriptions of the open view. Each subscription remembers the id of the last event it saw; after
// any drop the connection comes back with a fresh ticket and resubscribes with that `lastEventId`, so
// the server replays exactly what was missed. When there is nothing to resume from (or the server
// cannot resume: `resync_required`), the view reloads from REST once the subscription is live.
import type {
  AssetUpdatedEventMessage,
  ErrorMessage,
  EventType,
  NewNftEventMessage,
  NewTransferEventMessage,
  PongMessage,
  PriceUpdateEventMessage,
  ReplayedMessage,
  ResyncRequiredMessage,
  SubscribedMessage,
  SubscribeMessage,
  UnsubscribedMessage,
} from '../../../generated/asyncapi/models/index.ts';
import { unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';

export type LiveEvent =
  | NewNftEventMessage
  | NewTransferEventMessage
  | PriceUpdateEventMessage
  | AssetUpdatedEventMessage;
type ServerMessage =
  | LiveEvent
  | SubscribedMessage
  | UnsubscribedMessage
  | ReplayedMessage
  | ResyncRequiredMessage
  | ErrorMessage
  | PongMessage;

export type LiveStatus = 'offline' | 'connecting' | 'live' | 'reconnecting';

export interface Filters {
  events?: EventType[];
  walletId?: string;
  assetId?: string;
  collection?: string;
}

export interface SubscriptionHandlers {
  onEvent(event: LiveEvent): void;
  /**
   * The subscription (re)started from "now" with nothing to resume from: on the first subscribe,
   * after a drop before any event arrived, or after `resync_required` (events lost to retention).
   * Whatever happened before is only in REST: the view reloads its data.
   */
  onFreshStart(): void;
}

interface Subscription {
  key: string;
  filters: Filters;
  handlers: SubscriptionHandlers;
  /** Id of the last event delivered to this subscription, the resume point. */
  lastEventId: string | null;
  /** The server's id for it on the current connection, once `subscribed` arrives. */
  serverId: string | null;
}

const PING_EVERY_MS = 20_000;
const PONG_WITHIN_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;
/** Close codes after which reconnecting at once would only be refused again (AsyncAPI x-close-codes). */
const SLOW_DOWN_CODES = new Set([1008, 4029]);

/** Event ids are decimal strings; compare them as integers. */
function newer(id: string, than: string | null): boolean {
  return than === null || BigInt(id) > BigInt(than);
}

export class LiveConnection extends EventTarget {
  private readonly session: Session;
  private socket: WebSocket | null = null;
  private readonly subscriptions = new Map<string, Subscription>();
  private nextKey = 1;
  private attempt = 0;
  private retryTimer: number | undefined;
  private pingTimer: number | undefined;
  private pongTimer: number | undefined;
  private wanted = false;
  private statusValue: LiveStatus = 'offline';

  constructor(session: Session) {
    super();
    this.session = session;
    window.addEventListener('online', () => this.reconnectNow());
  }

  get status(): LiveStatus {
    return this.statusValue;
  }

  /** Adds a subscription (opening the connection if needed); returns the function that removes it. */
  subscribe(filters: Filters, handlers: SubscriptionHandlers): () => void {
    const key = `s${this.nextKey++}`;
    const subscription: Subscription = { key, filters, handlers, lastEventId: null, serverId: null };
    this.subscriptions.set(key, subscription);
    if (this.socket?.readyState === WebSocket.OPEN) this.sendSubscribe(subscription);
    else this.ensureConnected();
    return () => this.unsubscribe(key);
  }

  /** Closes the connection for good (sign-out). */
  stop(): void {
    this.wanted = false;
    this.subscriptions.clear();
    window.clearTimeout(this.retryTimer);
    this.stopHeartbeat();
    this.socket?.close(1000);
    this.socket = null;
    this.setStatus('offline');
  }

  private unsubscribe(key: string): void {
    const subscription = this.subscriptions.get(key);
    if (!subscription) return;
    this.subscriptions.delete(key);
    if (subscription.serverId && this.socket?.readyState === WebSocket.OPEN) {
      this.send({ type: 'unsubscribe', subscriptionId: subscription.serverId });
    }
  }

  private ensureConnected(): void {
    this.wanted = true;
    if (!this.socket && this.retryTimer === undefined) void this.connect();
  }

  private reconnectNow(): void {
    if (!this.wanted || this.socket) return;
    window.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (!this.wanted || !this.session.signedIn) return;
    this.setStatus(this.attempt === 0 ? 'connecting' : 'reconnecting');
    let url: string;
    try {
      // A ticket works once and for 30 s: every attempt gets a new one.
      url = unwrap(await this.session.api.POST('/api/v1/events/ws-ticket', { body: {} })).url;
    } catch {
      this.retryLater();
      return;
    }
    if (!this.wanted) return;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.addEventListener('open', () => {
      this.attempt = 0;
      for (const subscription of this.subscriptions.values()) this.sendSubscribe(subscription);
      this.startHeartbeat();
      this.setStatus('live');
    });
    socket.addEventListener('message', (message) => this.receive(message.data));
    socket.addEventListener('close', (close) => this.dropped(socket, close.code));
  }

  /** The socket is gone (closed by either side, or found dead): come back and resume. */
  private dropped(socket: WebSocket, code: number): void {
    if (this.socket !== socket) return;
    this.socket = null;
    this.stopHeartbeat();
    for (const subscription of this.subscriptions.values()) subscription.serverId = null;
    if (code === 4001) void this.session.refresh().catch(() => undefined);
    this.retryLater(SLOW_DOWN_CODES.has(code) ? MAX_BACKOFF_MS : 0);
  }

  private retryLater(minimumMs = 0): void {
    if (!this.wanted || !this.session.signedIn) {
      this.setStatus('offline');
      return;
    }
    this.setStatus('reconnecting');
    this.attempt += 1;
    // Exponential backoff with jitter, so a restarted server is not hit by every tab at once.
    const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.attempt - 1)) * (0.5 + Math.random() / 2);
    window.clearTimeout(this.retryTimer);
    this.retryTimer = window.setTimeout(
      () => {
        this.retryTimer = undefined;
        void this.connect();
      },
      Math.max(minimumMs, backoff),
    );
  }

  private sendSubscribe(subscription: Subscription): void {
    const message: SubscribeMessage = {
      type: 'subscribe',
      requestId: subscription.key,
      ...subscription.filters,
    };
    if (subscription.lastEventId !== null) message.lastEventId = subscription.lastEventId;
    this.send(message);
  }

  private send(message: object): void {
    this.socket?.send(JSON.stringify(message));
  }

  private receive(data: unknown): void {
    if (typeof data !== 'string') return;
    let message: ServerMessage;
    try {
      message = JSON.parse(data) as ServerMessage;
    } catch {
      return;
    }
    switch (message.type) {
      case 'subscribed': {
        const subscription = message.requestId ? this.subscriptions.get(message.requestId) : undefined;
        if (!subscription) {
          // Removed while the subscribe was in flight: drop it on the server too.
          this.send({ type: 'unsubscribe', subscriptionId: message.subscriptionId });
          break;
        }
        subscription.serverId = message.subscriptionId;
        if (message.replayFrom === null) subscription.handlers.onFreshStart();
        break;
      }
      case 'resync_required': {
        const subscription = message.requestId ? this.subscriptions.get(message.requestId) : undefined;
        if (!subscription) break;
        // Start again from now; its `subscribed` makes the view re-read everything over REST.
        subscription.lastEventId = null;
        this.sendSubscribe(subscription);
        break;
      }
      case 'newNFT':
      case 'newTransfer':
      case 'priceUpdate':
      case 'assetUpdated':
        this.deliver(message);
        break;
      case 'pong':
        window.clearTimeout(this.pongTimer);
        break;
      case 'error':
        console.warn(`live events: ${message.code}: ${message.message}`);
        break;
      default:
        break;
    }
  }

  private deliver(event: LiveEvent): void {
    for (const subscription of this.subscriptions.values()) {
      if (subscription.serverId === null || !event.subscriptionIds.includes(subscription.serverId)) continue;
      // A replay can overlap what was already seen; each event reaches a view once.
      if (!newer(event.id, subscription.lastEventId)) continue;
      subscription.lastEventId = event.id;
      subscription.handlers.onEvent(event);
    }
  }

  /** Browsers cannot send protocol pings: an application ping finds a dead connection quickly. */
  private startHeartbeat(): void {
    this.stopHeartbeat();
    this.pingTimer = window.setInterval(() => {
      this.send({ type: 'ping' });
      window.clearTimeout(this.pongTimer);
      this.pongTimer = window.setTimeout(() => {
        const socket = this.socket;
        if (!socket) return;
        // A dead connection may take minutes to report its close: give up on it now.
        this.dropped(socket, 1006);
        socket.close(4000, 'no pong');
      }, PONG_WITHIN_MS);
    }, PING_EVERY_MS);
  }

  private stopHeartbeat(): void {
    window.clearInterval(this.pingTimer);
    window.clearTimeout(this.pongTimer);
  }

  private setStatus(status: LiveStatus): void {
    if (status === this.statusValue) return;
    this.statusValue = status;
    this.dispatchEvent(new Event('status'));
  }
}

// A WebSocket subscriber that never gives up: on every close (the kill shows as 1006) it reconnects
// with backoff and subscribes again with `lastEventId` = the last event it received, as the AsyncAPI
// contract tells clients to. It records every event id in arrival order, and every message is
// checked against the contract (the validator of the tests' WebSocket client).
import WebSocket from 'ws';
import { type ServerMessage, validateServerMessage } from '../../lib/server-messages.ts';

export type EventType =
  | 'newNFT'
  | 'newTransfer'
  | 'priceUpdate'
  | 'chainTransferPending'
  | 'chainTransferRemoved';
const EVENT_TYPES: readonly string[] = [
  'newNFT',
  'newTransfer',
  'priceUpdate',
  'chainTransferPending',
  'chainTransferRemoved',
];

/** A subscription's filters, named as in the `subscribe` message (and the REST catch-up). */
export interface SubscriptionSpec {
  name: string;
  events?: EventType[];
  walletId?: string;
  assetId?: string;
  collection?: string;
}

export class ResumingSubscriber {
  /** Event ids as received, in order, across every connection. */
  readonly received: bigint[] = [];
  /** Subscriptions acknowledged after a reconnection (each one resumed with `lastEventId`). */
  resumes = 0;
  /** The `lastEventId` of every subscribe sent, to tell whether a gap sits at a resume point. */
  readonly resumePoints: bigint[] = [];
  private subscriptions = 0;
  /** `resync_required` and `error` messages, and contract violations: none is expected. */
  readonly problems: string[] = [];
  /** Connection attempts that failed after more than 2 s (a server that accepted but did not answer). */
  readonly slowHandshakes: string[] = [];
  private lastEventId: bigint;
  private socket: WebSocket | undefined;
  private closed = false;
  private backoffMs = 100;
  private firstSubscribed: (() => void) | undefined;
  private readonly url: string;
  private readonly headers: Record<string, string>;
  readonly spec: SubscriptionSpec;

  constructor(url: string, headers: Record<string, string>, spec: SubscriptionSpec, startAfter: bigint) {
    this.url = url;
    this.headers = headers;
    this.spec = spec;
    this.lastEventId = startAfter;
  }

  /** Connects and resolves once the first subscription is acknowledged. */
  start(): Promise<void> {
    const subscribed = new Promise<void>((resolve) => {
      this.firstSubscribed = resolve;
    });
    this.connect();
    return subscribed;
  }

  /** Resolves once an event with id >= `id` arrived; false after `timeoutMs`. */
  async caughtUp(id: bigint, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.lastEventId < id) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return true;
  }

  close(): void {
    this.closed = true;
    this.socket?.terminate();
  }

  private connect(): void {
    // A handshake the server never answers must not stall the subscriber until the next kill.
    const ws = new WebSocket(this.url, {
      headers: this.headers,
      perMessageDeflate: false,
      handshakeTimeout: 5000,
    });
    const attempted = Date.now();
    let open = false;
    this.socket = ws;
    ws.on('open', () => {
      open = true;
      const { name: _name, ...filters } = this.spec;
      this.resumePoints.push(this.lastEventId);
      ws.send(
        JSON.stringify({
          type: 'subscribe',
          requestId: this.spec.name,
          ...filters,
          lastEventId: String(this.lastEventId),
        }),
      );
    });
    ws.on('message', (data) => this.onMessage(JSON.parse(String(data)) as ServerMessage));
    ws.on('error', (error) => {
      // A close follows; only the errors of a handshake that took long are worth telling.
      if (!open && Date.now() - attempted > 2000)
        this.slowHandshakes.push(`${new Date().toISOString()} ${error.message}`);
    });
    ws.on('close', () => {
      if (this.closed) return;
      setTimeout(() => this.connect(), this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, 1000);
    });
  }

  private onMessage(message: ServerMessage): void {
    try {
      validateServerMessage(message);
    } catch (error) {
      this.problems.push((error as Error).message);
    }
    if (EVENT_TYPES.includes(message.type)) {
      const id = BigInt(message.id);
      this.received.push(id);
      if (id > this.lastEventId) this.lastEventId = id;
    } else if (message.type === 'subscribed') {
      if (this.subscriptions++ > 0) this.resumes++;
      this.backoffMs = 100;
      this.firstSubscribed?.();
      this.firstSubscribed = undefined;
    } else if (message.type === 'resync_required' || message.type === 'error') {
      this.problems.push(JSON.stringify(message));
    }
  }
}

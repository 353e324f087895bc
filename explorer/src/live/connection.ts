// The live events of the open view, through the official client's event stream (`@gats/client`,
// clients/typescript): one stream per subscription, each on its own /ws connection authenticated by
// a single-use ticket, delivering every matching event once and in order and resuming after any
// drop from the last event it delivered. A subscription whose events cannot all be had (the view's
// first start, or `resync_required` after retention or a restore) makes the view reload from REST.
import {
  type EventFilters,
  EventStream,
  type GatsEvent,
  type StreamState,
} from '../../../clients/typescript/src/index.ts';
import type { Session } from '../auth/session.ts';

export type LiveEvent = GatsEvent;
export type LiveStatus = 'offline' | 'connecting' | 'live' | 'reconnecting';
export type Filters = EventFilters;

export interface SubscriptionHandlers {
  onEvent(event: LiveEvent): void;
  /**
   * What happened before is only in REST: the view reloads its data. Called once the subscription
   * is first live, and after `resync_required` when events were removed or undone.
   */
  onFreshStart(): void;
}

/** The longest wait between reconnections: a restarted service is back in the view within it. */
const MAX_BACKOFF_MS = 10_000;

export class LiveConnection extends EventTarget {
  private readonly session: Session;
  private readonly streams = new Map<EventStream, { state: StreamState; wasLive: boolean }>();
  private statusValue: LiveStatus = 'offline';

  constructor(session: Session) {
    super();
    this.session = session;
  }

  get status(): LiveStatus {
    return this.statusValue;
  }

  /** Starts a subscription; returns the function that ends it. */
  subscribe(filters: Filters, handlers: SubscriptionHandlers): () => void {
    if (!this.session.signedIn) return () => undefined;
    const entry = { state: 'offline' as StreamState, wasLive: false };
    const stream = new EventStream({
      client: this.session.api,
      ...filters,
      reconnect: { maxDelayMs: MAX_BACKOFF_MS },
      onEvent: (event) => handlers.onEvent(event),
      onResync: () => handlers.onFreshStart(),
      onState: (state) => {
        entry.state = state;
        if ((state === 'live' || state === 'catching-up') && !entry.wasLive) {
          entry.wasLive = true;
          handlers.onFreshStart();
        }
        this.update();
      },
      onError: (error) => console.warn('live events:', error),
    });
    this.streams.set(stream, entry);
    stream.start();
    return () => {
      this.streams.delete(stream);
      void stream.stop();
      this.update();
    };
  }

  /** Ends every subscription (sign-out). */
  stop(): void {
    for (const stream of this.streams.keys()) void stream.stop();
    this.streams.clear();
    this.update();
  }

  /** One status for the header: live when every stream is; reconnecting when one that was is not. */
  private update(): void {
    const entries = [...this.streams.values()].filter((entry) => entry.state !== 'closed');
    let status: LiveStatus;
    if (entries.length === 0) status = 'offline';
    else if (entries.every((entry) => entry.state === 'live' || entry.state === 'catching-up'))
      status = 'live';
    else if (entries.some((entry) => entry.wasLive)) status = 'reconnecting';
    else status = 'connecting';
    if (status === this.statusValue) return;
    this.statusValue = status;
    this.dispatchEvent(new Event('status'));
  }
}

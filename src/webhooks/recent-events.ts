// The relay's recent events, kept in memory for the webhook fast path (./dispatcher.ts): a
// subscription whose position they cover is served from here, and the outbox is read only to catch
// up from further back. In id order, covering every event id in (`after`, last id]; at most twice
// RECENT_EVENTS, trimmed to RECENT_EVENTS.
import { type EventFilter, matches, type PublishedEvent } from '../events/filter.ts';
import { firstAfter, type LiveEvent, live } from './held.ts';

const RECENT_EVENTS = 5000;

export class RecentEvents {
  private events: LiveEvent[] = [];
  /** Every event id above this (up to the last kept) is here; null before the first hand-over. */
  private after: number | null = null;

  /** The relay handed over `published` (in id order): kept, as the copies returned. */
  add(published: readonly PublishedEvent[]): LiveEvent[] {
    if (published.length === 0) return [];
    if (this.after === null || published[0].id <= (this.events.at(-1)?.id ?? this.after)) {
      // The first hand-over (or ids going back, which the relay never does): start afresh.
      this.events = [];
      this.after = published[0].id - 1;
    }
    const added = published.map(live);
    for (const event of added) this.events.push(event);
    if (this.events.length > 2 * RECENT_EVENTS) {
      const dropped = this.events.length - RECENT_EVENTS;
      this.after = this.events[dropped - 1].id;
      this.events = this.events.slice(dropped);
    }
    return added;
  }

  /** Whether every event after `position` is here. */
  covers(position: number): boolean {
    return this.after !== null && position >= this.after;
  }

  /** The id of the last event kept (undefined: none). */
  get lastId(): number | undefined {
    return this.events.at(-1)?.id;
  }

  /**
   * The events after `position` that `filter` wants, at most `limit`, and how far that answer
   * reaches (the last event kept, or the last one taken when the limit cut it short).
   */
  matching(
    position: number,
    filter: EventFilter,
    limit = Number.POSITIVE_INFINITY,
  ): { events: LiveEvent[]; upTo: number } {
    const recent = this.events;
    const events: LiveEvent[] = [];
    for (let i = firstAfter(recent, position); i < recent.length; i++) {
      if (!matches(recent[i], filter)) continue;
      events.push(recent[i]);
      if (events.length === limit) return { events, upTo: recent[i].id };
    }
    return { events, upTo: recent.at(-1)?.id ?? position };
  }
}

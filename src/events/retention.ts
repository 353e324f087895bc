// The resync rule, one for REST catch-up (GET /api/v1/events?after=) and WebSocket resumes alike:
// a client that last saw event `after` has missed events once retention pruned past it, and must
// reload current state before continuing from the oldest event kept.
import type { EventStore } from './store.ts';

/** What the outbox still holds. */
export interface RetainedEvents {
  /** Every event id at or below this one may have been removed by retention (0: none was). */
  prunedThrough: number;
  oldest: number | null;
  newest: number | null;
}

export async function retainedEvents(store: EventStore): Promise<RetainedEvents> {
  const [prunedThrough, range] = await Promise.all([store.prunedThrough(), store.range()]);
  return { prunedThrough, oldest: range.oldest, newest: range.newest };
}

/** Why resuming after `after` cannot give every later event (retention removed some), or null. */
export function prunedSince(after: number, retained: RetainedEvents): string | null {
  return after < retained.prunedThrough
    ? `Events after ${after} up to ${retained.prunedThrough} were removed by retention`
    : null;
}

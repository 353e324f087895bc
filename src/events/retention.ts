// The resync rule, one for REST catch-up (GET /api/v1/events?after=) and WebSocket resumes alike:
// a client that last saw event `after` has missed events once retention pruned past it, or when a
// restore from a backup undid the events after it (./restores.ts), and must reload current state
// before continuing from the oldest event kept.
import { type RestoreGap, restoreGapHolding } from './restores.ts';
import type { EventStore } from './store.ts';

/** What the outbox still holds. */
export interface RetainedEvents {
  /** Every event id at or below this one may have been removed by retention (0: none was). */
  prunedThrough: number;
  oldest: number | null;
  /** Id ranges skipped by restores from backups. */
  restores: RestoreGap[];
}

export async function retainedEvents(store: EventStore): Promise<RetainedEvents> {
  const [prunedThrough, oldest, restores] = await Promise.all([
    store.prunedThrough(),
    store.oldest(),
    store.restoreGaps(),
  ]);
  return { prunedThrough, oldest, restores };
}

/**
 * Why resuming after `after` cannot give every later event (retention removed some, or a restore
 * undid them), or null.
 */
export function prunedSince(after: number, retained: RetainedEvents): string | null {
  if (after < retained.prunedThrough)
    return `Events after ${after} up to ${retained.prunedThrough} were removed by retention`;
  const restore = restoreGapHolding(after, retained.restores);
  return restore
    ? `Event ${after} and those before it back to ${restore.after + 1} were undone when the ledger was restored from a backup taken at event ${restore.after}; events since the restore start at ${restore.next}`
    : null;
}

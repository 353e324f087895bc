// What the read cache (./read-cache.ts) drops, from its two sources (wired in src/after-commit.ts):
// - this instance's commits, from the commit hook, right after the COMMIT and before the writer is
//   answered: a client never reads an older state than one it was told is committed;
// - every instance's commits, this one's included, when the relay reads their rows (outbox events
//   and internal ledger_change rows): another instance's change reaches this cache by the relay's
//   delay.
// The relay cannot tell this instance's rows from another's, and dropping this instance's keys a
// second time would drop answers computed after the commit (correct, but a miss per write). So each
// key dropped at commit is remembered once per change (row) that touched it (its echo), and the
// relay's next sighting of that key in a row is skipped. A key touched by another instance in between
// is then dropped at the echo of this instance's change instead (which the relay reads in the same or
// a following batch, ids being in order): the relay's delay either way. Counted per row, not per
// batch: two rows of one key in one batch are two sightings (counted per batch, a local change read
// in the same batch as another would leave an echo behind, and a later change of another instance
// would be skipped).
import { addKeysOf, type Change } from '../events/change-keys.ts';
import type { ReadCache } from './read-cache.ts';

export class ReadCacheInvalidation {
  private readonly cache: ReadCache;
  /** Keys dropped at commit whose relayed echo is still to come, with how many times. */
  private readonly echoes = new Map<string, number>();

  constructor(cache: ReadCache) {
    this.cache = cache;
  }

  /** A transaction committed on this instance: its `changes`, which touched `keys` (the commit hook's). */
  committedHere(keys: ReadonlySet<string>, changes: readonly Change[]): void {
    const touched = new Set<string>();
    for (const change of changes) {
      addKeysOf(change, touched);
      for (const key of touched) this.echoes.set(key, (this.echoes.get(key) ?? 0) + 1);
      touched.clear();
    }
    this.cache.invalidate(keys);
  }

  /** Changes committed by any instance, this one included, read back by the relay. */
  relayed(changes: Iterable<Change>): void {
    const keys = new Set<string>();
    const touched = new Set<string>();
    for (const change of changes) {
      addKeysOf(change, touched);
      for (const key of touched) {
        const echoes = this.echoes.get(key);
        if (echoes === undefined) keys.add(key);
        else if (echoes === 1) this.echoes.delete(key);
        else this.echoes.set(key, echoes - 1);
      }
      touched.clear();
    }
    if (keys.size > 0) this.cache.invalidate(keys);
  }
}

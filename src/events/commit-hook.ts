// The commit hook: the one place a committed ledger change is made known. A store calls `committed`
// with the changes (outbox events, internal ledger_change rows) one transaction wrote, right after its
// COMMIT and before any caller is answered; the hook then
//   1. invalidates this instance's cached reads keyed by what the changes touched (./change-keys.ts),
//      synchronously, so no answer that follows can be older than the change;
//   2. announces the commit (coalesced per turn of the event loop) to the commit bus, which nudges
//      the relay here and, through Redis, on the other instances; their relays read the same rows and
//      invalidate the same keys (`relayed`, the relay's listener, wired in src/app.ts).
// The relay here reads this instance's own rows too: their keys were invalidated at commit, and
// invalidating them again would drop answers computed after the commit (correct, but a miss per
// write). So each key invalidated at commit is remembered once, and the relay's next sighting of that
// key is skipped. A key touched by another instance in between is then invalidated at the echo of
// this instance's change instead (which the relay reads in the same or a following batch, ids being in
// order): the relay delay either way.
// The rows themselves are written inside the transaction by the writers in
// src/domain/ledger/outbox.ts, which are the only writers of outbox_event and ledger_change.
import { type Change, keysOf } from './change-keys.ts';

export type InvalidationListener = (keys: ReadonlySet<string>) => void;

export class CommitHook {
  private readonly invalidationListeners: InvalidationListener[] = [];
  private readonly commitListeners: (() => void)[] = [];
  private announcing = false;
  /** Keys invalidated at commit whose relayed echo is still to come, with how many times. */
  private readonly echoes = new Map<string, number>();

  /** Called with the keys every committed change (local or relayed) touched. */
  onInvalidate(listener: InvalidationListener): void {
    this.invalidationListeners.push(listener);
  }

  /** Called once per turn of the event loop in which this instance committed changes. */
  onCommit(listener: () => void): void {
    this.commitListeners.push(listener);
  }

  /** A transaction on this instance committed `changes` (it may be none: then nothing happens). */
  committed(changes: readonly Change[]): void {
    if (changes.length === 0) return;
    const keys = keysOf(changes);
    for (const key of keys) this.echoes.set(key, (this.echoes.get(key) ?? 0) + 1);
    this.notify(keys);
    if (this.announcing) return;
    this.announcing = true;
    // Commits of one turn share one announcement, right after that turn's I/O: under load a turn
    // handles many requests, and each announcement costs every relay a read of the outbox.
    setImmediate(() => {
      this.announcing = false;
      for (const listener of this.commitListeners) listener();
    });
  }

  /** Changes committed by any instance, this one included, read back by the relay. */
  relayed(changes: Iterable<Change>): void {
    const keys = new Set<string>();
    for (const key of keysOf(changes)) {
      const echoes = this.echoes.get(key);
      if (echoes === undefined) keys.add(key);
      else if (echoes === 1) this.echoes.delete(key);
      else this.echoes.set(key, echoes - 1);
    }
    this.notify(keys);
  }

  private notify(keys: ReadonlySet<string>): void {
    if (keys.size === 0) return;
    for (const listener of this.invalidationListeners) listener(keys);
  }
}

const hooks = new WeakMap<object, CommitHook>();

/** The commit hook of a database (one per ORM instance: one per app). */
export function commitHookOf(orm: object): CommitHook {
  let hook = hooks.get(orm);
  if (!hook) {
    hook = new CommitHook();
    hooks.set(orm, hook);
  }
  return hook;
}

// The commit hook: the one place a committed ledger change is made known on the instance that
// committed it. A store calls `committed` with the changes (outbox events, internal ledger_change
// rows) one transaction wrote, right after its COMMIT and before any caller is answered; the hook then
//   1. hands the keys of what the changes touched (./change-keys.ts) to its listeners, synchronously
//      (the read cache drops the answers showing them, so no answer that follows is older than the
//      change);
//   2. calls its commit listeners once per turn of the event loop in which changes committed (the
//      commit bus: the relays here and on the other instances read the outbox now).
// What happens next, and who listens, is declared in one place: src/after-commit.ts.
// The rows themselves are written inside the transaction by the writers in
// src/domain/ledger/outbox.ts, which are the only writers of outbox_event and ledger_change.
import { type Change, keysOf } from './change-keys.ts';

/** `keys`: what the transaction's `changes` touched, together. */
export type InvalidationListener = (keys: ReadonlySet<string>, changes: readonly Change[]) => void;

export class CommitHook {
  private readonly invalidationListeners: InvalidationListener[] = [];
  private readonly commitListeners: (() => void)[] = [];
  private announcing = false;

  /** Called with the keys each transaction committed on this instance touched, right after its COMMIT. */
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
    if (keys.size > 0) for (const listener of this.invalidationListeners) listener(keys, changes);
    if (this.announcing) return;
    this.announcing = true;
    // Commits of one turn share one announcement, right after that turn's I/O: under load a turn
    // handles many requests, and each announcement costs every relay a read of the outbox.
    setImmediate(() => {
      this.announcing = false;
      for (const listener of this.commitListeners) listener();
    });
  }
}

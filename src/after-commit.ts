// After COMMIT: everything a committed change sets off, declared here and nowhere else.
//
//   a store's COMMIT (src/domain/ledger/store/sqlite.ts, postgres.ts)
//   └─ the commit hook (src/events/commit-hook.ts): this instance's changes, before the writer is answered
//      ├─ read cache: drops the answers showing what changed, at once (src/http/read-cache-invalidation.ts)
//      └─ the commit bus (src/events/bus.ts): "look now", once per turn, to every instance's relay
//         (in-process; through Redis when several instances share the database)
//   the relay (src/events/tail.ts, OutboxTail): reads the outbox in id order, on a nudge or its poll,
//   and hands every committed event, once and in order, to its sinks, in this order:
//      1. webhook dispatcher (src/webhooks/dispatcher.ts): keeps the batch for its fast path and
//         copies it to its sending thread, which sends while this thread goes on with the fan-out
//         (never a request in the relay's hand-over);
//      2. read cache: what any instance changed (this instance's own changes were dropped at commit:
//         their echo is skipped), from the events and the internal ledger_change rows;
//      3. WebSocket gateway (src/ws/gateway.ts): live events to every connection.
// The read cache comes before the sockets: a client told of an event reads a state at least as new.
// Sinks are called one after the other with each batch; one that throws is logged by the relay and
// does not stop the others.
import type { CommitBus } from './events/bus.ts';
import type { CommitHook } from './events/commit-hook.ts';
import type { PublishedEvent } from './events/filter.ts';
import type { OutboxTail } from './events/tail.ts';
import type { ReadCache } from './http/read-cache.ts';
import { ReadCacheInvalidation } from './http/read-cache-invalidation.ts';

/**
 * Commit → announcement → relay read. Wired as soon as the relay runs, before any service commits
 * (the demo seed's commits go this way too).
 */
export function announceCommits(hook: CommitHook, bus: CommitBus, tail: OutboxTail): void {
  hook.onCommit(() => bus.announce());
  bus.onCommit(() => tail.nudge());
}

export interface RelaySinks {
  readCache: ReadCache;
  gateway: { dispatch(events: readonly PublishedEvent[]): void };
  webhooks: { published(events: readonly PublishedEvent[]): void };
}

/**
 * The read cache's two sources and the relay's sinks, wired once every sink exists. Returns the
 * unwiring of the relay's sinks (at shutdown, once the relay has handed over what it could).
 */
export function deliverCommits(hook: CommitHook, tail: OutboxTail, sinks: RelaySinks): () => void {
  const invalidation = new ReadCacheInvalidation(sinks.readCache);
  hook.onInvalidate((keys, changes) => invalidation.committedHere(keys, changes));
  const unwire = [
    tail.onEvents((events) => sinks.webhooks.published(events)),
    tail.onEvents((events) => invalidation.relayed(events)),
    tail.onChanges((changes) => invalidation.relayed(changes)),
    tail.onEvents((events) => sinks.gateway.dispatch(events)),
  ];
  return () => {
    for (const stop of unwire) stop();
  };
}

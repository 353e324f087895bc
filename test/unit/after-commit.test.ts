// The after-commit path (src/after-commit.ts): the commit hook and the relay's sinks, wired as the app
// wires them, with a stand-in relay that hands over the batches a test gives it.
import { describe, expect, it } from 'vitest';
import { announceCommits, deliverCommits } from '../../src/after-commit.ts';
import { inProcessBus } from '../../src/events/bus.ts';
import type { ChangedEvent } from '../../src/events/change-keys.ts';
import { CommitHook } from '../../src/events/commit-hook.ts';
import type { PublishedEvent } from '../../src/events/filter.ts';
import type { ChangeRow } from '../../src/events/store.ts';
import type { OutboxTail } from '../../src/events/tail.ts';
import { ledgerVersion, ReadCache } from '../../src/http/read-cache.ts';

const A = '0x00000000000000000000000000000000000000a1';
const B = '0x00000000000000000000000000000000000000b2';

/** A relay that hands over what the test gives it, to listeners registered the relay's way. */
function standInRelay() {
  const eventListeners = new Set<(events: readonly PublishedEvent[]) => void>();
  const changeListeners = new Set<(changes: readonly ChangeRow[]) => void>();
  let nudges = 0;
  const tail = {
    onEvents(listener: (events: readonly PublishedEvent[]) => void) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    onChanges(listener: (changes: readonly ChangeRow[]) => void) {
      changeListeners.add(listener);
      return () => changeListeners.delete(listener);
    },
    nudge() {
      nudges++;
    },
  };
  return {
    tail: tail as unknown as OutboxTail,
    nudges: () => nudges,
    events(events: PublishedEvent[]) {
      for (const listener of eventListeners) listener(events);
    },
    changes(changes: ChangeRow[]) {
      for (const listener of changeListeners) listener(changes);
    },
  };
}

function transfer(id: number, from: string, to: string): PublishedEvent & ChangedEvent {
  return {
    id,
    type: 'newTransfer',
    assetId: 'gold',
    collectionId: null,
    wallets: [from, to],
    json: '{}',
  };
}

function wired() {
  const hook = new CommitHook();
  const relay = standInRelay();
  const readCache = new ReadCache(
    ledgerVersion(() => 0),
    { maxEntries: 100, maxBytes: 1_000_000 },
  );
  const heard: string[] = [];
  const gateway = {
    dispatch(events: readonly PublishedEvent[]) {
      heard.push(`gateway ${events.map((event) => event.id).join(',')} cache ${readCache.size}`);
    },
  };
  const webhooks = {
    published(events: readonly PublishedEvent[]) {
      heard.push(`webhooks ${events.map((event) => event.id).join(',')}`);
    },
  };
  const stop = deliverCommits(hook, relay.tail, { readCache, gateway, webhooks });
  let computed = 0;
  /** The holdings of wallet A, cached under its change key. */
  const read = async () =>
    JSON.parse(
      (
        await readCache.json(
          'holdings A',
          async () => ({ n: ++computed }),
          () => [`w:${A}`],
        )
      ).toString(),
    ).n as number;
  return { hook, relay, readCache, heard, stop, read };
}

describe('after commit', () => {
  it("drops a cached read at this instance's commit, and not again at the relay's echo of it", async () => {
    const { hook, relay, read } = wired();
    expect(await read()).toBe(1);
    expect(await read()).toBe(1);
    hook.committed([transfer(0, A, B)]);
    expect(await read()).toBe(2); // dropped before the writer is answered
    relay.events([transfer(1, A, B)]); // the relay reads the same change back
    expect(await read()).toBe(2); // the answer computed after the commit stands
  });

  it("drops a cached read when the relay brings another instance's change", async () => {
    const { relay, read } = wired();
    expect(await read()).toBe(1);
    relay.events([transfer(1, B, A)]);
    expect(await read()).toBe(2);
    relay.changes([{ id: 1, kind: 'walletLinked', userId: 'u1', wallet: A }]);
    expect(await read()).toBe(3);
  });

  it('skips one echo per committed change: two local changes of a key read back in one batch, then a foreign one', async () => {
    const { hook, relay, read } = wired();
    await read();
    hook.committed([transfer(0, A, B)]);
    hook.committed([transfer(0, A, B)]);
    expect(await read()).toBe(2);
    relay.events([transfer(1, A, B), transfer(2, A, B)]);
    expect(await read()).toBe(2);
    relay.events([transfer(3, A, B)]);
    expect(await read()).toBe(3);
  });

  it("drops a foreign change read in the same batch as this instance's echo", async () => {
    const { hook, relay, read } = wired();
    await read();
    hook.committed([transfer(0, A, B)]);
    expect(await read()).toBe(2);
    relay.events([transfer(1, A, B), transfer(2, B, A)]); // ours, then another instance's
    expect(await read()).toBe(3);
  });

  it('hands each relayed batch to the webhooks, then the read cache, then the sockets', async () => {
    const { relay, heard, read } = wired();
    await read();
    relay.events([transfer(1, A, B), transfer(2, B, A)]);
    // The sockets hear of the batch once the cached read showing it is gone.
    expect(heard).toEqual(['webhooks 1,2', 'gateway 1,2 cache 0']);
  });

  it('hands nothing to the sinks once unwired', () => {
    const { relay, heard, stop } = wired();
    stop();
    relay.events([transfer(1, A, B)]);
    expect(heard).toEqual([]);
  });

  it("announces this instance's commits once per turn, and the bus nudges the relay", async () => {
    const hook = new CommitHook();
    const relay = standInRelay();
    announceCommits(hook, inProcessBus(), relay.tail);
    hook.committed([transfer(0, A, B)]);
    hook.committed([transfer(0, B, A)]);
    hook.committed([]); // nothing committed: nothing announced
    expect(relay.nudges()).toBe(0); // coalesced: after this turn's I/O
    await new Promise((resolve) => setImmediate(resolve));
    expect(relay.nudges()).toBe(1);
  });
});

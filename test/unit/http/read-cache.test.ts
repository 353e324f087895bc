import { describe, expect, it } from 'vitest';
import { bypassesCache, type LedgerVersion, ledgerVersion, ReadCache } from '../../../src/http/read-cache.ts';

function counter(): LedgerVersion & { value: number } {
  const version = {
    value: 0,
    current: () => version.value,
    bump: () => {
      version.value++;
    },
  };
  return version;
}

const limits = { maxEntries: 100, maxBytes: 1_000_000 };
/** An answer that shows no change key (only a version move drops it). */
const NONE = () => [];
const json = async (buffer: Promise<Buffer>) => JSON.parse((await buffer).toString());

describe('read cache', () => {
  it('keeps an answer read from a replica only when its state is newer than the last invalidation', async () => {
    const cache = new ReadCache(counter(), limits);
    let stateAt = 0;
    // What src/db/replicas.ts `observe` reports: the state time of the replica the answer was read on.
    cache.readsFrom(async (work) => ({ value: await work(), stateAt }));
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    const keys = () => ['wallet:0xa'];
    stateAt = performance.now();
    cache.invalidate(['wallet:0xb']); // any change after the replica's state: it may not show it
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 1 });
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 2 });
    expect(cache.size).toBe(0);
    stateAt = performance.now() + 1; // the replica now holds every invalidated change
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 3 });
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 3 });
    expect(cache.size).toBe(1);
    stateAt = Number.POSITIVE_INFINITY; // the primary's answers are kept as before
    cache.invalidate(['wallet:0xa']);
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 4 });
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 4 });
  });

  it('answers a repeated read from the cache until the ledger version moves', async () => {
    const version = counter();
    const cache = new ReadCache(version, limits);
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    expect(JSON.parse((await cache.json('a', compute, NONE)).toString())).toEqual({ n: 1 });
    expect(JSON.parse((await cache.json('a', compute, NONE)).toString())).toEqual({ n: 1 });
    expect(cache.hits).toBe(1);
    version.bump();
    expect(JSON.parse((await cache.json('a', compute, NONE)).toString())).toEqual({ n: 2 });
    expect(cache.misses).toBe(2);
  });

  it('does not keep an answer computed while the version moved', async () => {
    const version = counter();
    const cache = new ReadCache(version, limits);
    let computed = 0;
    const racing = async () => {
      version.bump(); // a write commits while the read is in flight
      return { n: ++computed };
    };
    await cache.json('a', racing, NONE);
    expect(cache.size).toBe(0);
    expect(JSON.parse((await cache.json('a', async () => ({ n: ++computed }), NONE)).toString())).toEqual({
      n: 2,
    });
    expect(cache.size).toBe(1);
  });

  it('recomputes when the client bypasses it, and keeps the fresh answer', async () => {
    const cache = new ReadCache(counter(), limits);
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    await cache.json('a', compute, NONE);
    expect(JSON.parse((await cache.json('a', compute, NONE, true)).toString())).toEqual({ n: 2 });
    expect(JSON.parse((await cache.json('a', compute, NONE)).toString())).toEqual({ n: 2 });
  });

  it('keeps the fresh answer of a bypassing read under the same change keys, still dropped by them', async () => {
    const cache = new ReadCache(counter(), limits);
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    const keys = () => ['w:0xa', 'a:gold'];
    await cache.json('a', compute, keys);
    await cache.json('b', compute, () => ['w:0xb']);
    expect(await json(cache.json('a', compute, keys, true))).toEqual({ n: 3 });
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 3 });
    expect(cache.size).toBe(2);
    cache.invalidate(['a:gold']);
    expect(cache.size).toBe(1);
    expect(await json(cache.json('a', compute, keys))).toEqual({ n: 4 });
    // Kept as the newest: the oldest ('b') goes first.
    expect(await json(cache.json('a', compute, keys, true))).toEqual({ n: 5 });
    const small = new ReadCache(counter(), { maxEntries: 2, maxBytes: 1_000_000 });
    await small.json('x', compute, keys);
    await small.json('y', compute, NONE);
    await small.json('x', compute, keys, true);
    await small.json('z', compute, NONE);
    const hits = small.hits;
    await small.json('x', compute, keys);
    expect(small.hits).toBe(hits + 1);
  });

  it('keeps nothing from a failed read', async () => {
    const cache = new ReadCache(counter(), limits);
    await expect(cache.json('a', async () => Promise.reject(new Error('not found')), NONE)).rejects.toThrow(
      'not found',
    );
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used answers past its entry and byte limits, and keeps nothing when off', async () => {
    const byEntries = new ReadCache(counter(), { maxEntries: 2, maxBytes: 1_000_000 });
    for (const key of ['a', 'b', 'c']) await byEntries.json(key, async () => key, NONE);
    expect(byEntries.size).toBe(2);
    let recomputed = false;
    await byEntries.json(
      'a',
      async () => {
        recomputed = true;
        return 'a';
      },
      NONE,
    );
    expect(recomputed).toBe(true);

    // The least recently used goes first: an answer just served stays, an older one not read since leaves.
    const recent = new ReadCache(counter(), { maxEntries: 2, maxBytes: 1_000_000 });
    const computed: string[] = [];
    const once = (key: string) => async () => {
      computed.push(key);
      return key;
    };
    for (const key of ['a', 'b', 'a', 'c', 'a', 'b']) await recent.json(key, once(key), NONE);
    expect(computed).toEqual(['a', 'b', 'c', 'b']);
    // An evicted answer's change keys are forgotten with it: invalidating them drops only what shows them.
    const indexed = new ReadCache(counter(), { maxEntries: 2, maxBytes: 1_000_000 });
    for (const key of ['p', 'q', 'r'])
      await indexed.json(
        key,
        async () => key,
        () => [`k:${key}`, 'k:all'],
      );
    expect(indexed.size).toBe(2);
    indexed.invalidate(['k:p']);
    expect(indexed.size).toBe(2);
    indexed.invalidate(['k:all']);
    expect(indexed.size).toBe(0);

    // A no-cache read refreshes a kept answer but adds none: fresh reads of other keys evict nothing.
    const shared = new ReadCache(counter(), { maxEntries: 2, maxBytes: 1_000_000 });
    for (const key of ['a', 'b']) await shared.json(key, async () => key, NONE);
    for (const key of ['c', 'd', 'e']) await shared.json(key, async () => key, NONE, true);
    expect(shared.size).toBe(2);
    const sharedHits = shared.hits;
    for (const key of ['a', 'b']) await shared.json(key, async () => `${key} again`, NONE);
    expect(shared.hits).toBe(sharedHits + 2);
    await shared.json('a', async () => 'a fresh', NONE, true);
    expect(JSON.parse((await shared.json('a', async () => 'a recomputed', NONE)).toString('utf8'))).toBe(
      'a fresh',
    );

    const byBytes = new ReadCache(counter(), { maxEntries: 100, maxBytes: 25 });
    for (const key of ['a', 'b', 'c']) await byBytes.json(key, async () => 'x'.repeat(8), NONE); // 10 bytes each
    expect(byBytes.size).toBe(2);
    await byBytes.json('big', async () => 'x'.repeat(40), NONE);
    expect(byBytes.size).toBe(2); // larger than the whole cache: served, not kept

    const off = new ReadCache(counter(), { maxEntries: 0, maxBytes: 1_000_000 });
    await off.json('a', async () => 'a', NONE);
    expect(off.size).toBe(0);
  });

  it('moves the version when the database says it changed', async () => {
    let database = 7;
    let reads = 0;
    const throttled = ledgerVersion(() => {
      reads++;
      return database;
    }, 5);
    const before = throttled.current();
    database = 8;
    for (let index = 0; index < 100; index++) throttled.current();
    expect(reads).toBeLessThan(3); // read at most every 5 ms, not per call
    await new Promise((resolve) => setTimeout(resolve, 6));
    expect(throttled.current()).not.toBe(before);

    database = 7;
    const version = ledgerVersion(() => database, 0);
    const first = version.current();
    expect(version.current()).toBe(first);
    database = 8;
    const second = version.current();
    expect(second).not.toBe(first);
    version.bump();
    expect(version.current()).not.toBe(second);
  });

  it('drops exactly the answers showing a touched change key, and keeps the rest', async () => {
    const cache = new ReadCache(counter(), limits);
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    const walletA = () => ['w:a', 'a:gold'];
    const walletB = () => ['w:b', 'a:gold'];
    await cache.json('A', compute, walletA);
    await cache.json('B', compute, walletB);
    cache.invalidate(['w:a']); // a transfer touching wallet a only
    expect(await json(cache.json('A', compute, walletA))).toEqual({ n: 3 });
    expect(await json(cache.json('B', compute, walletB))).toEqual({ n: 2 }); // still cached
    cache.invalidate(['a:gold', 'h:gold']); // a mint of gold changes every listing that shows it
    expect(await json(cache.json('A', compute, walletA))).toEqual({ n: 4 });
    expect(await json(cache.json('B', compute, walletB))).toEqual({ n: 5 });
    expect(cache.size).toBe(2);
  });

  it('does not keep an answer one of whose keys was touched while it was computed', async () => {
    const cache = new ReadCache(counter(), limits);
    let computed = 0;
    const racing = (touched: string) => async () => {
      cache.invalidate([touched]); // a change commits while the read is in flight
      return { n: ++computed };
    };
    await cache.json('A', racing('w:b'), () => ['w:a']);
    expect(cache.size).toBe(1); // another wallet's change: kept
    await cache.json('B', racing('w:b'), () => ['w:b']);
    expect(cache.size).toBe(1); // its own: not kept
    expect(
      await json(
        cache.json(
          'B',
          async () => ({ n: ++computed }),
          () => ['w:b'],
        ),
      ),
    ).toEqual({ n: 3 });
    expect(cache.size).toBe(2);
  });

  it('keeps nothing computed across more invalidations than it remembers', async () => {
    const cache = new ReadCache(counter(), limits);
    await cache.json(
      'A',
      async () => {
        cache.invalidate(Array.from({ length: 5000 }, (_, index) => `w:${index}`));
        return 1;
      },
      () => ['w:elsewhere'],
    );
    expect(cache.size).toBe(0);
  });

  it('recognizes the request directives that ask for a fresh answer', () => {
    for (const header of ['no-cache', 'No-Store', 'max-age=0', 'private, no-cache', 'max-age = 0']) {
      expect(bypassesCache(header), header).toBe(true);
    }
    for (const header of [undefined, '', 'max-age=60', 'no-transform', 'x-no-cache']) {
      expect(bypassesCache(header), String(header)).toBe(false);
    }
  });
});

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

describe('read cache', () => {
  it('answers a repeated read from the cache until the ledger version moves', async () => {
    const version = counter();
    const cache = new ReadCache(version, limits);
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    expect(JSON.parse((await cache.json('a', compute)).toString())).toEqual({ n: 1 });
    expect(JSON.parse((await cache.json('a', compute)).toString())).toEqual({ n: 1 });
    expect(cache.hits).toBe(1);
    version.bump();
    expect(JSON.parse((await cache.json('a', compute)).toString())).toEqual({ n: 2 });
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
    await cache.json('a', racing);
    expect(cache.size).toBe(0);
    expect(JSON.parse((await cache.json('a', async () => ({ n: ++computed }))).toString())).toEqual({ n: 2 });
    expect(cache.size).toBe(1);
  });

  it('recomputes when the client bypasses it, and keeps the fresh answer', async () => {
    const cache = new ReadCache(counter(), limits);
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    await cache.json('a', compute);
    expect(JSON.parse((await cache.json('a', compute, true)).toString())).toEqual({ n: 2 });
    expect(JSON.parse((await cache.json('a', compute)).toString())).toEqual({ n: 2 });
  });

  it('keeps nothing from a failed read', async () => {
    const cache = new ReadCache(counter(), limits);
    await expect(cache.json('a', async () => Promise.reject(new Error('not found')))).rejects.toThrow(
      'not found',
    );
    expect(cache.size).toBe(0);
  });

  it('evicts the oldest answers past its entry and byte limits, and keeps nothing when off', async () => {
    const byEntries = new ReadCache(counter(), { maxEntries: 2, maxBytes: 1_000_000 });
    for (const key of ['a', 'b', 'c']) await byEntries.json(key, async () => key);
    expect(byEntries.size).toBe(2);
    let recomputed = false;
    await byEntries.json('a', async () => {
      recomputed = true;
      return 'a';
    });
    expect(recomputed).toBe(true);

    const byBytes = new ReadCache(counter(), { maxEntries: 100, maxBytes: 25 });
    for (const key of ['a', 'b', 'c']) await byBytes.json(key, async () => 'x'.repeat(8)); // 10 bytes each
    expect(byBytes.size).toBe(2);
    await byBytes.json('big', async () => 'x'.repeat(40));
    expect(byBytes.size).toBe(2); // larger than the whole cache: served, not kept

    const off = new ReadCache(counter(), { maxEntries: 0, maxBytes: 1_000_000 });
    await off.json('a', async () => 'a');
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

  it('recognizes the request directives that ask for a fresh answer', () => {
    for (const header of ['no-cache', 'No-Store', 'max-age=0', 'private, no-cache', 'max-age = 0']) {
      expect(bypassesCache(header), header).toBe(true);
    }
    for (const header of [undefined, '', 'max-age=60', 'no-transform', 'x-no-cache']) {
      expect(bypassesCache(header), String(header)).toBe(false);
    }
  });
});

// The serialized answers of the hottest ledger reads (wallet holdings, an asset, its owners), kept
// while the ledger has not changed, so a repeated read costs a map lookup instead of a query and a
// JSON serialization. Authentication, authorization and validation still run on every request: only
// the handler's work is saved.
//
// When a cached answer may be served: each answer is kept with the keys of what it shows (the wallets,
// assets, holders and user it covers: src/events/change-keys.ts) and dropped when a committed change
// touched one of them:
// - on this instance, by the commit hook (src/events/commit-hook.ts) right after the COMMIT, before
//   the writer's answer leaves: a client never reads an older state than one it was told is committed;
// - for changes committed by any instance, when the relay reads their rows (every ledger change writes
//   an outbox event or an internal ledger_change row): with several instances on PostgreSQL, a read on
//   instance B may trail a write committed through instance A by the relay's delay (milliseconds; at
//   worst EVENT_RELAY_POLL_MS).
// Writes that bypass the service (another process on the same SQLite file: `PRAGMA data_version` on
// the service's writing connection, read at most once a millisecond) empty the whole cache.
// A request with `Cache-Control: no-cache` is always answered from the database (its answer refreshes
// one kept for the same read, and is not kept otherwise).
//
// An answer computed while one of its keys was invalidated is not kept (it may predate the change).
// With read replicas (src/db/replicas.ts) an answer read from a replica is kept only when the
// replica's state is newer than the last invalidation: it then shows every change invalidated so far.

import { LRUCache } from 'lru-cache';

export interface LedgerVersion {
  /** A number that differs after any committed change the reads could show. */
  current(): number;
  /** Marks a change made (or possibly made) on this instance. */
  bump(): void;
}

/**
 * The ledger version from a local counter (this instance's writes, events relayed from others) and,
 * where the database can say (SQLite), its own change counter, read at most every `checkEveryMs`
 * (reading it takes a few microseconds, a large share of a cached read): a commit that did not go
 * through this instance's requests (another process on the same file) shows within that time.
 */
export function ledgerVersion(databaseVersion: () => number, checkEveryMs = 1): LedgerVersion {
  let version = 0;
  let database = databaseVersion();
  let checkedAt = performance.now();
  return {
    current() {
      const now = performance.now();
      if (now - checkedAt >= checkEveryMs) {
        checkedAt = now;
        const latest = databaseVersion();
        if (latest !== database) {
          database = latest;
          version++;
        }
      }
      return version;
    },
    bump() {
      version++;
    },
  };
}

export interface ReadCacheOptions {
  /**
   * Most answers kept; past it the least recently used go first (lru-cache: in constant time, where a
   * Map's oldest-first eviction walks the holes its deletions leave, ~7 µs each at 10,000 answers).
   */
  maxEntries: number;
  /** Most bytes (sum of the answers' sizes) kept. */
  maxBytes: number;
}

/** How many recent invalidations an answer being computed is checked against (beyond: not kept). */
const RECENT_INVALIDATIONS = 4096;

interface Entry {
  body: Buffer;
  keys: readonly string[];
}

/** How the reads behind an answer are observed: the time of the oldest state they read (src/db/replicas.ts). */
type ReadObserver = <T>(work: () => Promise<T>) => Promise<{ value: T; stateAt: number }>;

export class ReadCache {
  /** The answers, each in `byChangeKey` under its keys until it leaves (evicted, deleted, cleared). */
  private readonly entries: LRUCache<string, Entry>;
  /** Change key -> the cache keys of the answers that show it. */
  private readonly byChangeKey = new Map<string, Set<string>>();
  private version: number;
  /** Counts invalidated change keys; `recent` holds the last RECENT_INVALIDATIONS of them, in order. */
  private invalidations = 0;
  private readonly recent: string[] = new Array(RECENT_INVALIDATIONS);
  hits = 0;
  misses = 0;
  /** performance.now() of the last invalidation (or reset). */
  private invalidatedAt = Number.NEGATIVE_INFINITY;
  private observe: ReadObserver | undefined;

  private readonly ledger: LedgerVersion;
  private readonly options: ReadCacheOptions;

  constructor(ledger: LedgerVersion, options: ReadCacheOptions) {
    this.ledger = ledger;
    this.options = options;
    this.version = ledger.current();
    this.entries = new LRUCache<string, Entry>({
      max: Math.max(1, options.maxEntries),
      maxSize: Math.max(1, options.maxBytes),
      sizeCalculation: (entry) => Math.max(1, entry.body.length),
      // A fresh body with the same keys replaces an answer in place ('set'): its index entries stand.
      dispose: (entry, cacheKey, reason) => {
        if (reason !== 'set') this.unindex(cacheKey, entry);
      },
    });
  }

  /** Answers are computed under `observer` (read replicas): see the top of the file. */
  readsFrom(observer: ReadObserver): void {
    this.observe = observer;
  }

  /**
   * The JSON of `compute()`'s answer as UTF-8 (what goes on the wire, so a hit is not encoded again),
   * from the cache while none of its change keys was touched. `keysOf` names what the answer shows.
   */
  json<T>(
    key: string,
    compute: () => Promise<T>,
    keysOf: (answer: T) => readonly string[],
    bypass = false,
  ): Promise<Buffer> {
    return this.body(
      key,
      async () => {
        const answer = await compute();
        return { body: Buffer.from(JSON.stringify(answer), 'utf8'), keys: keysOf(answer) };
      },
      bypass,
    );
  }

  /**
   * An answer already serialized by `compute()` (with the change keys of what it shows), from the
   * cache while none of those keys was touched; `bypass` (the client's `Cache-Control: no-cache`)
   * computes it again, and refreshes the answer if one is kept, but never adds one: a client asking for
   * fresh answers of many keys (random wallets of a large ledger) would otherwise evict everyone's
   * cached answers, and pay an eviction on each of its own.
   */
  async body(
    key: string,
    compute: () => Promise<{ body: Buffer; keys: readonly string[] }>,
    bypass = false,
  ): Promise<Buffer> {
    const version = this.ledger.current();
    if (version !== this.version) this.reset(version);
    if (!bypass) {
      const cached = this.entries.get(key);
      if (cached !== undefined) {
        this.hits++;
        return cached.body;
      }
    }
    this.misses++;
    const invalidationsBefore = this.invalidations;
    const { value, stateAt } = this.observe
      ? await this.observe(compute)
      : { value: await compute(), stateAt: Number.POSITIVE_INFINITY };
    const { body, keys } = value;
    // Kept only if nothing it shows changed while it was computed, nor before its state (a replica's).
    if (this.ledger.current() === version && this.version === version && stateAt > this.invalidatedAt) {
      if ((!bypass || this.entries.has(key)) && this.untouchedSince(invalidationsBefore, keys))
        this.store(key, body, keys);
    }
    return body;
  }

  /** Drops every answer showing one of `changeKeys` (what a committed change touched). */
  invalidate(changeKeys: Iterable<string>): void {
    this.invalidatedAt = performance.now();
    for (const changeKey of changeKeys) {
      this.recent[this.invalidations % RECENT_INVALIDATIONS] = changeKey;
      this.invalidations++;
      const cacheKeys = this.byChangeKey.get(changeKey);
      if (!cacheKeys) continue;
      for (const cacheKey of [...cacheKeys]) this.entries.delete(cacheKey);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  private untouchedSince(before: number, keys: readonly string[]): boolean {
    if (this.invalidations === before) return true;
    if (this.invalidations - before > RECENT_INVALIDATIONS) return false;
    for (let index = before; index < this.invalidations; index++) {
      if (keys.includes(this.recent[index % RECENT_INVALIDATIONS])) return false;
    }
    return true;
  }

  private reset(version: number): void {
    this.invalidatedAt = performance.now();
    this.entries.clear();
    this.byChangeKey.clear();
    this.version = version;
  }

  /** Drops a departing answer from the index of the change keys it showed. */
  private unindex(cacheKey: string, entry: Entry): void {
    for (const changeKey of entry.keys) {
      const cacheKeys = this.byChangeKey.get(changeKey);
      if (!cacheKeys) continue;
      cacheKeys.delete(cacheKey);
      if (cacheKeys.size === 0) this.byChangeKey.delete(changeKey);
    }
  }

  private store(key: string, body: Buffer, keys: readonly string[]): void {
    if (this.options.maxEntries === 0 || body.length > this.options.maxBytes) return;
    const kept = this.entries.peek(key);
    if (kept && sameKeys(kept.keys, keys)) {
      // A fresh answer (a read that bypassed the cache) showing the same things: only its body
      // changes, its index entries stand; the newest again.
      this.entries.set(key, { body, keys: kept.keys });
      return;
    }
    this.entries.delete(key);
    // Past the limits, the least recently used answers leave (and their index entries: `dispose`).
    this.entries.set(key, { body, keys });
    for (const changeKey of keys) {
      let cacheKeys = this.byChangeKey.get(changeKey);
      if (!cacheKeys) {
        cacheKeys = new Set();
        this.byChangeKey.set(changeKey, cacheKeys);
      }
      cacheKeys.add(key);
    }
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

/** Whether the client asked for an answer from the source (`Cache-Control: no-cache`, `no-store`, `max-age=0`). */
export function bypassesCache(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  return /(?:^|,)\s*(?:no-cache|no-store|max-age\s*=\s*0)\s*(?:,|$)/i.test(String(header));
}

// The serialized answers of the hottest ledger reads (wallet holdings, an asset, its owners), kept
// while the ledger has not changed, so a repeated read costs a map lookup instead of a query and a
// JSON serialization. Authentication, authorization and validation still run on every request: only
// the handler's work is saved.
//
// When a cached answer may be served: the cache belongs to one ledger *version* and is emptied when the
// version moves. The version moves
// - on SQLite, whenever any connection commits a change to the file (`PRAGMA data_version` on the
//   read connection, read at most once a millisecond): whatever wrote, within a millisecond;
// - on this instance, when any state-changing request (not GET/HEAD/OPTIONS) finishes, before its
//   answer leaves: a client never reads an older state than one it was told is committed;
// - when the relay hands over events committed by any instance (every ledger change writes one):
//   with several instances on PostgreSQL, a read on instance B may trail a write committed through
//   instance A by the relay's delay (milliseconds; the relay polls at worst every RELAY_POLL_MS).
// A request with `Cache-Control: no-cache` is always answered from the database.
//
// An answer computed while the version moved is not kept (it may predate the change).

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
  /** Most answers kept; past it the oldest go first. */
  maxEntries: number;
  /** Most bytes (sum of the answers' sizes) kept. */
  maxBytes: number;
}

export class ReadCache {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;
  private version: number;
  hits = 0;
  misses = 0;

  private readonly ledger: LedgerVersion;
  private readonly options: ReadCacheOptions;

  constructor(ledger: LedgerVersion, options: ReadCacheOptions) {
    this.ledger = ledger;
    this.options = options;
    this.version = ledger.current();
  }

  /**
   * The JSON of `compute()`'s answer as UTF-8 (what goes on the wire, so a hit is not encoded again),
   * from the cache when the ledger has not changed since.
   */
  async json(key: string, compute: () => Promise<unknown>, bypass = false): Promise<Buffer> {
    const version = this.ledger.current();
    if (version !== this.version) this.reset(version);
    if (!bypass) {
      const cached = this.entries.get(key);
      if (cached !== undefined) {
        this.hits++;
        return cached;
      }
    }
    this.misses++;
    const body = Buffer.from(JSON.stringify(await compute()), 'utf8');
    // Kept only if nothing changed while it was computed.
    if (this.ledger.current() === version && this.version === version) this.store(key, body);
    return body;
  }

  get size(): number {
    return this.entries.size;
  }

  private reset(version: number): void {
    this.entries.clear();
    this.bytes = 0;
    this.version = version;
  }

  private store(key: string, body: Buffer): void {
    if (this.options.maxEntries === 0 || body.length > this.options.maxBytes) return;
    const previous = this.entries.get(key);
    if (previous !== undefined) {
      this.entries.delete(key);
      this.bytes -= previous.length;
    }
    while (this.entries.size >= this.options.maxEntries || this.bytes + body.length > this.options.maxBytes) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.bytes -= (this.entries.get(oldest.value) as Buffer).length;
      this.entries.delete(oldest.value);
    }
    this.entries.set(key, body);
    this.bytes += body.length;
  }
}

/** Whether the client asked for an answer from the source (`Cache-Control: no-cache`, `no-store`, `max-age=0`). */
export function bypassesCache(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  return /(?:^|,)\s*(?:no-cache|no-store|max-age\s*=\s*0)\s*(?:,|$)/i.test(String(header));
}

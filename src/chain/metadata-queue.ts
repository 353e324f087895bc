// The metadata fetcher's in-memory scheduling (finding 30.8): fair queues (round robin over keys: a
// contract's tokens, a host's documents) and per-host slots with a time-out bench, so that one slow
// contract or host never holds up the others.

/** FIFO queues per key, served round robin: one item of each key in turn. */
export class FairQueue<K, T> {
  private readonly queues = new Map<K, T[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(key: K, item: T): void {
    const queue = this.queues.get(key);
    if (queue) queue.push(item);
    else this.queues.set(key, [item]);
    this.count += 1;
  }

  /** The next item of the first key (in turn) that `ready` accepts; that key goes to the back. */
  shift(ready: (key: K) => boolean = () => true): T | undefined {
    for (const [key, queue] of this.queues) {
      if (!ready(key)) continue;
      const item = queue.shift() as T;
      this.queues.delete(key);
      if (queue.length > 0) this.queues.set(key, queue);
      this.count -= 1;
      return item;
    }
    return undefined;
  }

  /** Removes and answers every item of `key`. */
  take(key: K): T[] {
    const queue = this.queues.get(key) ?? [];
    this.queues.delete(key);
    this.count -= queue.length;
    return queue;
  }

  /** Removes and answers every item. */
  clear(): T[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    this.count = 0;
    return all;
  }
}

export interface HostLimits {
  /** Requests to one host at a time. */
  perHost: number;
  /** How long a host that let a request time out is benched first (doubled while it goes on). */
  benchMs: number;
  /** The longest bench. */
  maxBenchMs: number;
}

/**
 * Per-host slots and time budget: at most `perHost` requests to a host at once, and a host whose
 * request timed out is benched (nothing is sent to it) for `benchMs`, doubled at each further
 * time-out up to `maxBenchMs`, back to `benchMs` after an answer.
 */
export class HostGate {
  private readonly running = new Map<string, number>();
  private readonly benches = new Map<string, { until: number; ms: number }>();
  private readonly limits: HostLimits;

  constructor(limits: HostLimits) {
    this.limits = limits;
  }

  /** Whether a request to `host` may start now. */
  free(host: string, now = Date.now()): boolean {
    return (this.running.get(host) ?? 0) < this.limits.perHost && this.benchedUntil(host, now) === undefined;
  }

  /** When the bench of `host` ends, if it is benched. */
  benchedUntil(host: string, now = Date.now()): number | undefined {
    const bench = this.benches.get(host);
    return bench && bench.until > now ? bench.until : undefined;
  }

  start(host: string): void {
    this.running.set(host, (this.running.get(host) ?? 0) + 1);
  }

  /** A request ended: timed out (the host is benched) or not (its bench resets). */
  end(host: string, timedOut: boolean, now = Date.now()): void {
    const left = (this.running.get(host) ?? 1) - 1;
    if (left > 0) this.running.set(host, left);
    else this.running.delete(host);
    if (!timedOut) {
      this.benches.delete(host);
      return;
    }
    const previous = this.benches.get(host);
    // Requests sent together time out together: one bench for them, doubled only when it is over.
    if (previous && previous.until > now) return;
    const ms = previous ? Math.min(previous.ms * 2, this.limits.maxBenchMs) : this.limits.benchMs;
    this.benches.set(host, { until: now + ms, ms });
  }
}

// Latency percentiles over millions of samples in bounded memory: fixed 0.1 ms buckets up to 60 s.
const BUCKET_MS = 0.1;
const BUCKETS = 600_000;

export class Histogram {
  private readonly counts = new Uint32Array(BUCKETS + 1);
  count = 0;
  private sum = 0;

  static of(samples: readonly number[]): Histogram {
    const histogram = new Histogram();
    for (const sample of samples) histogram.record(sample);
    return histogram;
  }

  /** Records a latency in milliseconds; negatives (clock granularity) count as 0, beyond 60 s as 60 s. */
  record(ms: number): void {
    const clamped = Math.max(0, ms);
    this.counts[Math.min(BUCKETS, Math.floor(clamped / BUCKET_MS))]++;
    this.count++;
    this.sum += clamped;
  }

  mean(): number {
    return this.count === 0 ? Number.NaN : this.sum / this.count;
  }

  /** The smallest latency at or below which `fraction` of the samples fall (bucket upper bound). */
  percentile(fraction: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = Math.ceil(fraction * this.count);
    let seen = 0;
    for (let bucket = 0; bucket <= BUCKETS; bucket++) {
      seen += this.counts[bucket];
      if (seen >= rank) return (bucket + 1) * BUCKET_MS;
    }
    return BUCKETS * BUCKET_MS;
  }
}

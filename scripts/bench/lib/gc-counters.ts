// The service's garbage collection during a load, read from its own /metrics (prom-client's default
// metrics: `nodejs_gc_duration_seconds` by kind, `nodejs_heap_size_used_bytes`), before and after:
// pauses by kind a thousand answers and the heap in use after. The scale benchmark prints it beside
// each load's CPU by thread, to tell a grown service that pays in collection (large caches of views,
// a heap left by the loads before) from one that pays in queries.

/** Pauses by kind (seconds and how many) and the heap in use, as one scrape gives them. */
export interface GcCounters {
  seconds: Record<string, number>;
  count: Record<string, number>;
  heapUsedBytes: number;
}

const GC_LINE = /^nodejs_gc_duration_seconds_(sum|count)\{kind="([a-z]+)"\} ([0-9.e+-]+)$/;

/** Parses the Prometheus text exposition of a scrape. */
export function parseGcCounters(text: string): GcCounters {
  const counters: GcCounters = { seconds: {}, count: {}, heapUsedBytes: 0 };
  for (const line of text.split('\n')) {
    const gc = GC_LINE.exec(line);
    if (gc) {
      const [, part, kind, value] = gc;
      (part === 'sum' ? counters.seconds : counters.count)[kind] = Number(value);
    } else if (line.startsWith('nodejs_heap_size_used_bytes ')) {
      counters.heapUsedBytes = Number(line.split(' ')[1]);
    }
  }
  return counters;
}

export async function gcCounters(baseUrl: string): Promise<GcCounters | undefined> {
  const response = await fetch(`${baseUrl}/metrics`);
  if (!response.ok) return undefined;
  return parseGcCounters(await response.text());
}

/**
 * "GC ms a 1,000 answers: major 12.5 (3), minor 40.1 (210), ...; heap used after 153 MB": the kinds
 * that paused during the window, by time, with how many pauses.
 */
export function gcPerAnswer(before: GcCounters, after: GcCounters, answers: number): string | undefined {
  if (answers <= 0) return undefined;
  const kinds = Object.keys(after.seconds)
    .map((kind) => ({
      kind,
      seconds: after.seconds[kind] - (before.seconds[kind] ?? 0),
      count: (after.count[kind] ?? 0) - (before.count[kind] ?? 0),
    }))
    .filter(({ count }) => count > 0)
    .sort((a, b) => b.seconds - a.seconds);
  const pauses =
    kinds.length === 0
      ? 'none'
      : kinds
          .map(({ kind, seconds, count }) => `${kind} ${((seconds * 1e6) / answers).toFixed(1)} (${count})`)
          .join(', ');
  return `GC ms a 1,000 answers: ${pauses}; heap used after ${(after.heapUsedBytes / 1e6).toFixed(0)} MB`;
}

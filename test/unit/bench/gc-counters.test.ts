// The scale benchmark's view of the service's garbage collection during a load: parsed from the
// service's /metrics text as prom-client writes it, the window's pauses by kind a 1,000 answers (the
// longest first, kinds that did not pause left out) and the heap in use after.
import { describe, expect, it } from 'vitest';
import { gcPerAnswer, parseGcCounters } from '../../../scripts/bench/lib/gc-counters.ts';

const scrape = (major: [number, number], minor: [number, number], heap: number) =>
  [
    '# HELP nodejs_gc_duration_seconds Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
    '# TYPE nodejs_gc_duration_seconds histogram',
    'nodejs_gc_duration_seconds_bucket{le="0.001",kind="major"} 0',
    `nodejs_gc_duration_seconds_sum{kind="major"} ${major[0]}`,
    `nodejs_gc_duration_seconds_count{kind="major"} ${major[1]}`,
    `nodejs_gc_duration_seconds_sum{kind="minor"} ${minor[0]}`,
    `nodejs_gc_duration_seconds_count{kind="minor"} ${minor[1]}`,
    'nodejs_gc_duration_seconds_sum{kind="incremental"} 0.5',
    'nodejs_gc_duration_seconds_count{kind="incremental"} 7',
    `nodejs_heap_size_used_bytes ${heap}`,
    'nodejs_heap_size_total_bytes 999999999',
  ].join('\n');

describe('gcPerAnswer', () => {
  it('gives the window’s pauses a 1,000 answers by kind, longest first, and the heap after', () => {
    const before = parseGcCounters(scrape([1.0, 10], [2.0, 100], 50e6));
    const after = parseGcCounters(scrape([1.3, 13], [2.1, 300], 153e6));
    expect(after.heapUsedBytes).toBe(153e6);
    expect(gcPerAnswer(before, after, 20_000)).toBe(
      'GC ms a 1,000 answers: major 15.0 (3), minor 5.0 (200); heap used after 153 MB',
    );
  });

  it('says none when nothing paused, and nothing without answers', () => {
    const same = parseGcCounters(scrape([1, 1], [1, 1], 10e6));
    expect(gcPerAnswer(same, same, 10)).toBe('GC ms a 1,000 answers: none; heap used after 10 MB');
    expect(gcPerAnswer(same, same, 0)).toBeUndefined();
  });
});

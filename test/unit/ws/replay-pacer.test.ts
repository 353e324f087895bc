// The replay pacer (src/ws/replay.ts): replays on an instance take turns a step at a time and pause
// after each step as long as it took, so that together they leave other work at least about half
// of the event loop (finding 13.2).
import { describe, expect, it } from 'vitest';
import { ReplayPacer } from '../../../src/ws/replay.ts';

/** Keeps the event loop busy for `ms`, as a replay step reading and framing events does. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('replay pacer', () => {
  it('13.2: runs one step at a time, pausing after each as long as it took, and lets other work in between', async () => {
    const pacer = new ReplayPacer();
    const spans: [string, number, number][] = [];
    const step = (name: string) =>
      pacer.step(async () => {
        const started = performance.now();
        busy(10);
        spans.push([name, started, performance.now()]);
      });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const started = performance.now();
    await Promise.all([step('a1'), step('b1'), step('a2'), step('b2')]);
    clearInterval(ticker);
    expect(spans.map(([name]) => name)).toEqual(['a1', 'b1', 'a2', 'b2']);
    for (let i = 1; i < spans.length; i++) {
      // Never overlapping, and the pause after a 10 ms step is about 10 ms.
      expect(spans[i][1] - spans[i - 1][2]).toBeGreaterThanOrEqual(8);
    }
    // About half the time was left to other work: timers ran during the pauses.
    expect(performance.now() - started).toBeGreaterThanOrEqual(65);
    expect(ticks).toBeGreaterThan(3);
  });
});

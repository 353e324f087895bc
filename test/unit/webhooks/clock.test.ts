// The webhook dispatcher's clock (src/webhooks/clock.ts) stays on the wall clock when the monotonic
// clock stops (a paused virtual machine, a suspended host) or the system clock is stepped: the
// delivery times it gives are compared with Date.now() and the database's clock (the retry window).
// Before it, `performance.timeOrigin + performance.now()` fell behind by the pause and stayed there:
// a delivery's first attempt was recorded a pause earlier and given up before its window ran (the
// webhook tests failed after a pause of the machine).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

describe('the webhook clock', () => {
  let monotonic: number;
  let wall: number;

  beforeEach(() => {
    monotonic = 5_000.25;
    wall = Date.UTC(2026, 11, 1, 10, 0, 0);
    vi.spyOn(performance, 'now').mockImplementation(() => monotonic);
    vi.spyOn(Date, 'now').mockImplementation(() => Math.floor(wall));
    vi.resetModules();
  });
  afterEach(() => vi.restoreAllMocks());

  /** Both clocks move by `ms`, as they do while the machine runs. */
  const run = (ms: number) => {
    monotonic += ms;
    wall += ms;
  };

  it('reads the wall clock with sub-millisecond steps', async () => {
    const { clock } = await import('../../../src/webhooks/clock.ts');
    const first = clock();
    expect(Math.abs(first - Date.now())).toBeLessThan(1);
    run(0.3);
    expect(clock() - first).toBeCloseTo(0.3, 3);
    run(250.4);
    expect(clock() - first).toBeCloseTo(250.7, 3);
  });

  it('follows the wall clock after a pause of the monotonic clock, and goes on from there', async () => {
    const { clock } = await import('../../../src/webhooks/clock.ts');
    clock();
    wall += 90_000; // the machine was paused 90 s: the wall clock moved on, the monotonic one did not
    const after = clock();
    expect(Math.abs(after - Date.now())).toBeLessThan(2);
    run(0.4);
    expect(clock() - after).toBeCloseTo(0.4, 3);
    run(1_000);
    expect(Math.abs(clock() - Date.now())).toBeLessThan(2);
  });

  it('follows a step of the system clock backwards', async () => {
    const { clock } = await import('../../../src/webhooks/clock.ts');
    run(10);
    clock();
    wall -= 30_000;
    expect(Math.abs(clock() - Date.now())).toBeLessThan(2);
  });
});

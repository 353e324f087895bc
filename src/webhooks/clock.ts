// The webhook dispatcher's clock: wall-clock milliseconds (as Date.now()) with the sub-millisecond
// resolution of performance.now(), for the times a delivery records (its first attempt, its next
// one: compared with Date.now() and the database's clock) and for the stages of its time (buckets
// from 0.5 ms, metrics.ts), on the main thread and the sender's thread alike.
// `performance.timeOrigin + performance.now()` alone is not a wall clock: the monotonic clock stops
// while a virtual machine is paused or the host suspends, and does not follow a step of the system
// clock, so that sum fell behind Date.now() by the length of a pause and stayed behind: a delivery
// then recorded its first attempt that much earlier and was given up before its retry window ran
// (seen in the test suite after a pause of the machine). Here the monotonic reading is anchored to
// Date.now() again whenever the two part by more than their resolution allows (Date.now() counts
// whole milliseconds). Hand-written: the npm packages near it (hirestime, performance-now,
// precise-now, timestamp-nano) read the monotonic clock alone; this is one comparison a reading.
let offset = Date.now() - performance.now();

export function clock(): number {
  const monotonic = performance.now();
  const wall = Date.now();
  const reading = monotonic + offset;
  if (reading < wall - 1 || reading >= wall + 2) {
    offset = wall - monotonic;
    return wall;
  }
  return reading;
}

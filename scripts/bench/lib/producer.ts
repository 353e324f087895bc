// A producer at a steady rate: every few milliseconds it starts the requests that are due, so the rate
// holds even when single requests are slow (up to a cap on requests in flight).
const TICK_MS = 5;
/** An oracle with this many posts unanswered stops sending more until some are answered. */
const MAX_IN_FLIGHT = 64;

export interface ProducerResult {
  started: number;
  succeeded: number;
  failed: number;
  /** Requests not started because MAX_IN_FLIGHT were still waiting (the target could not keep up). */
  skipped: number;
  /** Latency of each producing request in milliseconds (for the service: the commit). */
  latencies: number[];
  seconds: number;
}

/** Calls `send(sequence)` `rate` times per second for `seconds`; `send` resolves true on success. */
export async function produceSteadily(
  rate: number,
  seconds: number,
  send: (sequence: number) => Promise<boolean>,
): Promise<ProducerResult> {
  const result: ProducerResult = {
    started: 0,
    succeeded: 0,
    failed: 0,
    skipped: 0,
    latencies: [],
    seconds,
  };
  const inFlight = new Set<Promise<void>>();
  const begin = performance.now();
  const total = Math.round(rate * seconds);
  let due = 0;
  while (due < total) {
    const elapsed = performance.now() - begin;
    const target = Math.min(total, Math.floor((elapsed / 1000) * rate));
    for (; due < target; due++) {
      if (inFlight.size >= MAX_IN_FLIGHT) {
        result.skipped++;
        continue;
      }
      const sequence = result.started++;
      const sentAt = performance.now();
      const request = send(sequence)
        .catch(() => false)
        .then((ok) => {
          result.latencies.push(performance.now() - sentAt);
          if (ok) result.succeeded++;
          else result.failed++;
          inFlight.delete(request);
        });
      inFlight.add(request);
    }
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  await Promise.all(inFlight);
  return result;
}

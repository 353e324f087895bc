// The soak's HTTP load: an open-loop mix of reads and writes at a fixed offered rate (requests start on
// schedule whether or not earlier ones finished, up to a cap in flight), so a service that slows down
// shows as lower throughput and higher latency rather than as a slower client. Statistics are kept per
// reporting window and per third of the run.
import { randomUUID } from 'node:crypto';
import type { Session } from '../../lib/api.ts';
import { Histogram } from '../../lib/histogram.ts';

export interface LoadTarget {
  baseUrl: string;
  players: Session[];
  oracle: Session;
  currencies: string[];
  nfts: string[];
}

interface PlannedRequest {
  label: string;
  method: 'GET' | 'POST';
  path: string;
  session: Session;
  body?: unknown;
}

/** The mix, by weight: mostly reads, some transfers and price posts (each one event to every subscriber). */
const MIX: [number, (target: LoadTarget) => PlannedRequest][] = [
  [
    30,
    (t) => ({
      label: 'wallet assets',
      method: 'GET',
      path: `/wallets/${pick(t.players).wallet}/assets`,
      session: pick(t.players),
    }),
  ],
  [
    20,
    (t) => ({
      label: 'asset',
      method: 'GET',
      path: `/assets/${pick([...t.nfts, ...t.currencies])}`,
      session: pick(t.players),
    }),
  ],
  [
    15,
    (t) => ({
      label: 'price',
      method: 'GET',
      path: `/api/v1/price/${pick(t.currencies)}`,
      session: pick(t.players),
    }),
  ],
  [
    10,
    (t) => ({
      label: 'transfers',
      method: 'GET',
      path: `/api/v1/transfers?wallet=${pick(t.players).wallet}&limit=20`,
      session: pick(t.players),
    }),
  ],
  [
    5,
    (t) => ({
      label: 'owners',
      method: 'GET',
      path: `/assets/${pick(t.currencies)}/owners`,
      session: pick(t.players),
    }),
  ],
  [
    15,
    (t) => {
      const from = pick(t.players);
      const to = pick(t.players.filter((player) => player !== from));
      const amount = `${1 + Math.floor(Math.random() * 99)}.00`;
      return {
        label: 'transfer',
        method: 'POST',
        path: '/api/v1/transfer',
        session: from,
        body: { assetId: pick(t.currencies), from: from.wallet, to: to.wallet, amount },
      };
    },
  ],
  [
    5,
    (t) => ({
      label: 'price post',
      method: 'POST',
      path: `/api/v1/price/${pick(t.currencies)}`,
      session: t.oracle,
      body: { price: (0.01 + Math.random()).toFixed(4), currency: 'USD', source: 'soak-oracle' },
    }),
  ],
];
const TOTAL_WEIGHT = MIX.reduce((sum, [weight]) => sum + weight, 0);

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)];
}

function plan(target: LoadTarget): PlannedRequest {
  let roll = Math.random() * TOTAL_WEIGHT;
  for (const [weight, make] of MIX) {
    roll -= weight;
    if (roll < 0) return make(target);
  }
  return MIX[0][1](target);
}

/** Answers that are part of normal operation: a spend beyond the balance, the rate limit. */
const INTENDED_STATUSES = new Set([409, 429]);

export class WindowStats {
  completed = 0;
  readonly latency = new Histogram();
  readonly statuses = new Map<string, number>();
  serverErrors = 0;
  /** Failures other than 2xx and intended 4xx: unexpected 4xx, 5xx and requests without an answer. */
  unexpectedCount = 0;
  /** The first 20 of them, described. */
  readonly unexpected: string[] = [];
  /** Requests not started because the cap in flight was reached (the service fell behind). */
  skipped = 0;

  record(label: string, status: number | 'no answer', ms: number, detail = ''): void {
    this.completed++;
    this.latency.record(ms);
    const key = `${label} ${status}`;
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
    if (status !== 'no answer' && status >= 500) this.serverErrors++;
    if (status === 'no answer' || (status >= 400 && !INTENDED_STATUSES.has(status))) {
      this.unexpectedCount++;
      if (this.unexpected.length < 20) this.unexpected.push(`${key} ${detail}`.trim());
    }
  }
}

export interface MixedLoad {
  /** Starts a new window and returns the one that just ended. */
  rotate(): WindowStats;
  /** Stops starting requests; resolves when those in flight are done (recorded in the last window). */
  stop(): Promise<WindowStats>;
  /** Every result also goes to the current third's statistics. */
  third: WindowStats;
}

export function startMixedLoad(target: LoadTarget, ratePerSecond: number, maxInFlight: number): MixedLoad {
  let window = new WindowStats();
  const load: MixedLoad = {
    third: new WindowStats(),
    rotate() {
      const ended = window;
      window = new WindowStats();
      return ended;
    },
    async stop() {
      clearInterval(timer);
      while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));
      return window;
    },
  };
  const started = performance.now();
  let launched = 0;
  let inFlight = 0;

  const send = async (request: PlannedRequest) => {
    inFlight++;
    const begin = performance.now();
    const headers: Record<string, string> = { ...request.session.headers };
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = randomUUID();
    }
    let status: number | 'no answer';
    let detail = '';
    try {
      const response = await fetch(target.baseUrl + request.path, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      status = response.status;
      if (status >= 400) detail = text.slice(0, 200);
    } catch (error) {
      status = 'no answer';
      detail = error instanceof Error ? error.message : String(error);
    }
    const ms = performance.now() - begin;
    window.record(request.label, status, ms, detail);
    load.third.record(request.label, status, ms, detail);
    inFlight--;
  };

  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * ratePerSecond);
    while (launched < due) {
      launched++;
      if (inFlight >= maxInFlight) {
        window.skipped++;
        load.third.skipped++;
        continue;
      }
      void send(plan(target));
    }
  }, 10);
  return load;
}

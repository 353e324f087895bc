// Issue 14.1 and 14.3: PostgreSQL connections cut again and again under transactional writes, and
// PostgreSQL away or hanging, through the fault proxy (the shared server keeps running). The instance
// must answer 503 with its own problem types meanwhile (never a 500 or driver text) and serve
// normally within 5 s of the outage's end, without a restart.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { type FaultWorld, startFaultWorld } from './world.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const OUTAGE_TYPES = ['/problems/database-unavailable', '/problems/outcome-unknown'];

/** Milliseconds until `/readyz` is 200 and a write through the pool succeeds (throws past `limitMs`). */
async function recovery(w: FaultWorld, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const ready = await w.t.http('GET', '/readyz');
    if (ready.status === 200) {
      const mint = await w.t.http('POST', '/api/v1/currencies/gold/mint', {
        body: { to: w.bob.wallet, amount: '1' },
        headers: w.studio.headers,
      });
      if (mint.status === 201) return Date.now() - started;
    }
    if (Date.now() - started > limitMs) throw new Error(`not serving ${limitMs} ms after the outage`);
    await sleep(50);
  }
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}

describe.runIf(DB_KINDS.includes('postgres'))('PostgreSQL outages (through the fault proxy)', () => {
  let w: FaultWorld;
  /** What the app logged (error level and above), one parsed JSON object per line. */
  const logged: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logged.push(JSON.parse(line));
      done();
    },
  });
  beforeAll(async () => {
    // A small pool: it would run dry after two connections lost mid-transaction. A connection that
    // hangs gives up before the request does (2.5 against 3 s): 1 s failed the start-up's first
    // connection through the proxy in a CI run on a slow machine.
    w = await startFaultWorld('postgres', {
      env: { REQUEST_TIMEOUT_MS: '3000', DATABASE_CONNECT_TIMEOUT_MS: '2500' },
      logger: createLogger('error', sink),
    });
  });
  afterAll(() => w?.close());

  it('14.1: connections cut 20 times under transactional writes leave no stuck instance: serving within 5 s, losses in /metrics', async () => {
    const pg = w.pg as NonNullable<FaultWorld['pg']>;
    const seen = new Map<string, number>();
    let stop = false;
    const writer = async () => {
      while (!stop) {
        const response = await w.t.http('POST', '/api/v1/currencies/gold/mint', {
          body: { to: w.bob.wallet, amount: '1' },
          headers: w.studio.headers,
        });
        const what = `${response.status} ${response.status >= 400 ? response.body.type : ''}`.trim();
        seen.set(what, (seen.get(what) ?? 0) + 1);
      }
    };
    const writers = Array.from({ length: 6 }, writer);
    await sleep(300);
    for (let cut = 0; cut < 20; cut++) {
      pg.cut();
      await sleep(100);
    }
    const recoveredMs = await recovery(w, 5_000);
    stop = true;
    await Promise.all(writers);
    console.log(
      `14.1 recovery after 20 cuts: ${recoveredMs} ms; answers: ${JSON.stringify(Object.fromEntries(seen))}`,
    );
    expect(recoveredMs).toBeLessThan(5_000);
    for (const what of seen.keys())
      expect(['201', ...OUTAGE_TYPES.map((type) => `503 ${type}`)]).toContain(what);
    const metrics = (await w.t.http('GET', '/metrics')).text;
    expect(metric(metrics, 'db_connections_lost_total')).toBeGreaterThan(0);
    expect(metric(metrics, 'db_pool_max_connections')).toBe(10);
  });

  it('14.3: PostgreSQL refusing connections is a 503 database-unavailable with Retry-After and no driver text, then it serves again', async () => {
    const pg = w.pg as NonNullable<FaultWorld['pg']>;
    pg.refuse();
    try {
      const read = await w.t.http('GET', '/api/v1/assets', { headers: w.alice.headers });
      expect(read.status).toBe(503);
      expect(read.body.type).toBe('/problems/database-unavailable');
      expect(Number(read.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(read.text).not.toMatch(/ECONN|terminat|pg_|postgres|timeout exceeded/i);
      const write = await w.t.http('POST', '/api/v1/transfer', {
        body: { assetId: 'gold', from: w.alice.wallet, to: w.bob.wallet, amount: '1' },
        headers: { ...w.alice.headers, 'idempotency-key': 'refused-1' },
      });
      expect(write.status).toBe(503);
      expect(OUTAGE_TYPES).toContain(write.body.type);
      const ready = await w.t.http('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.database).toBe('failed');
      // 15.7: each 5xx is logged once, with its request id and its cause (never to the client).
      for (const answer of [read, write]) {
        const lines = logged.filter((line) => line.requestId === answer.headers.get('x-request-id'));
        expect(lines, JSON.stringify(logged)).toHaveLength(1);
        expect(lines[0].msg).toBe('request failed');
        expect(lines[0].err?.message).toBeTruthy();
        expect(answer.text).not.toContain(lines[0].err.message);
      }
    } finally {
      pg.heal();
    }
    expect(await recovery(w, 5_000)).toBeLessThan(5_000);
  });

  it('32.9: the relay reports its lag after a write; /metrics answers while PostgreSQL refuses, the relay read age growing, then falling back', async () => {
    const pg = w.pg as NonNullable<FaultWorld['pg']>;
    const lagCount = async () =>
      metric((await w.t.http('GET', '/metrics')).text, 'events_relay_lag_seconds_count');
    // /metrics answers while the database is away (it answered 503: a gauge read the database).
    const readAge = async () => {
      const scrape = await w.t.http('GET', '/metrics');
      expect(scrape.status).toBe(200);
      return metric(scrape.text, 'events_relay_read_age_seconds');
    };
    const before = await lagCount();
    const mint = await w.t.http('POST', '/api/v1/currencies/gold/mint', {
      body: { to: w.bob.wallet, amount: '1' },
      headers: w.studio.headers,
    });
    expect(mint.status).toBe(201);
    await w.t.app.events.tail.flush();
    expect(await lagCount()).toBeGreaterThan(before);
    pg.refuse();
    try {
      await sleep(3_000);
      expect(await readAge()).toBeGreaterThan(2);
    } finally {
      pg.heal();
    }
    await recovery(w, 5_000);
    const deadline = Date.now() + 5_000;
    while ((await readAge()) > 2 && Date.now() < deadline) await sleep(100);
    expect(await readAge()).toBeLessThanOrEqual(2);
  });

  it('14.3: a write still running when the request times out answers outcome-unknown, and the same Idempotency-Key then gives its one result', async () => {
    const pg = w.pg as NonNullable<FaultWorld['pg']>;
    const transfer = (key: string) =>
      w.t.http('POST', '/api/v1/transfer', {
        body: { assetId: 'gold', from: w.alice.wallet, to: w.bob.wallet, amount: '7' },
        headers: { ...w.alice.headers, 'idempotency-key': key },
      });
    // Warm connections are in the pool; pausing them makes the write hang after it was sent.
    const before = await w.t.http('GET', `/wallets/${w.bob.wallet}/assets`, {
      headers: { ...w.bob.headers, 'cache-control': 'no-cache' },
    });
    pg.pause();
    let timedOut: Awaited<ReturnType<typeof transfer>>;
    try {
      timedOut = await transfer('paused-1');
    } finally {
      pg.heal();
    }
    expect(timedOut.status).toBe(503);
    expect(timedOut.body.type).toBe('/problems/outcome-unknown');
    expect(timedOut.body.detail).toMatch(/Idempotency-Key/);
    expect(Number(timedOut.headers.get('retry-after'))).toBeGreaterThan(0);
    // The retry with the same key answers the first (and only) transfer.
    let retry = await transfer('paused-1');
    for (let attempt = 0; retry.status === 503 && attempt < 40; attempt++) {
      await sleep(100);
      retry = await transfer('paused-1');
    }
    expect(retry.status).toBe(201);
    const again = await transfer('paused-1');
    expect(again.body.id).toBe(retry.body.id);
    const balance = (response: typeof before) =>
      Number(
        response.body.data.find((row: { asset: { id: string } }) => row.asset.id === 'gold')?.balance ?? 0,
      );
    const after = await w.t.http('GET', `/wallets/${w.bob.wallet}/assets`, {
      headers: { ...w.bob.headers, 'cache-control': 'no-cache' },
    });
    expect(balance(after) - balance(before)).toBe(7);
  });
});

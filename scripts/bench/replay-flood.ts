// Replay flood (finding 13.2): one user floods the WebSocket gateway with resuming subscribes while
// another client reads /healthz and its wallet; the bystander's latency is what is measured.
// The database holds 100,000 retained events (copies of one real transfer, inserted behind the
// service's back, then a real transfer the relay reads past them). The flooding user opens 50
// connections (one API key) and sends 20 subscribes on each, 1,000 in all, in two cases:
// - from "0": every subscribe is answered `resync_required` (100,000 events is past
//   WS_MAX_REPLAY_EVENTS); the burst is sent again every 2 s, as fast as the per-connection message
//   rate allows, for the whole run;
// - from 9,000 events back (inside the replay window): 1,000 replays of 9,000 events each (9 million
//   frames) wait their turn under the per-key and per-user caps and stream at the pace the clients
//   read them for the whole run.
// Each case runs the bystander's two loads at once (autocannon, --connections each): GET /healthz and
// GET /wallets/{id}/assets; the same loads without a flood, and against the Koa hello baseline
// (GET / twice at once), frame the figures.
// Target (issue 13.2): the bystander's /healthz and wallet read p99 under 50 ms during the flood.
import { call, createCollection, createCurrency, createUser, mint, type Session } from '../lib/api.ts';
import { connectLean, type LeanWebSocket } from '../lib/lean-ws.ts';
import { type Service, startService } from '../lib/service.ts';
import {
  type BystanderResult,
  bystanderFigures,
  bystanderLoads,
  bystanderReport,
  type Flood,
  measureBystander,
} from './lib/bystander.ts';
import { startHello } from './lib/hello.ts';
import type { BenchOptions } from './lib/options.ts';
import { record } from './lib/record.ts';
import { fixed, heading } from './lib/report.ts';

const RETAINED = 100_000;
const CONNECTIONS = 50;
const SUBSCRIBES_PER_CONNECTION = 20;
/** Inside the default WS_MAX_REPLAY_EVENTS (10,000). */
const IN_WINDOW_BACK = 9_000;
/** The burst of 20 subscribes per connection refills at 10 messages per second. */
const BURST_EVERY_MS = 2_100;
const TARGET_P99_MS = 50;
const ASSET = 'flood-coin';

const RESYNC = Buffer.from('"type":"resync_required"');
const REPLAYED = Buffer.from('"type":"replayed"');
const SUBSCRIBED = Buffer.from('"type":"subscribed"');
const EVENT = Buffer.from('{"subscriptionIds"');

interface FloodCounts {
  subscribes: number;
  resyncs: number;
  subscribed: number;
  replayed: number;
  events: number;
  bytes: number;
  closes: Map<number, number>;
}

export async function replayFlood(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const { stormer, bystander, newest } = await prepare(service);
      const wsUrl = `${service.baseUrl.replace(/^http/, 'ws')}/ws`;
      heading(`replay flood on ${kind}: ${RETAINED} retained events, 1,000 subscribes by one user`, {
        'bystander connections per load': options.connections,
        'seconds per run': options.durationSeconds,
      });
      const { helloA, helloB, healthz, wallet } = await bystanderLoads(
        options,
        hello.baseUrl,
        service.baseUrl,
        bystander,
      );
      const cases: Array<{ name: string; flood?: () => Promise<Flood<FloodCounts>> }> = [
        { name: 'no flood' },
        { name: 'flood from "0" (resync_required)', flood: () => flood(wsUrl, stormer, '0') },
        {
          name: `flood from ${IN_WINDOW_BACK} back (replays)`,
          flood: () => flood(wsUrl, stormer, String(newest - IN_WINDOW_BACK)),
        },
      ];
      const helloRun = await measureBystander<FloodCounts>(hello, 'Koa hello', helloA, helloB);
      const results: BystanderResult<FloodCounts>[] = [];
      for (const one of cases)
        results.push(await measureBystander(service, one.name, healthz, wallet, one.flood));
      const counted = (show: (counts: FloodCounts, seconds: number) => string) =>
        results.map((r) => (r.counts ? show(r.counts, r.seconds) : '-'));
      bystanderReport(
        helloRun,
        results,
        [
          ['subscribes sent', ...counted((c) => String(c.subscribes))],
          ['answers: resync / subscribed', ...counted((c) => `${c.resyncs} / ${c.subscribed}`)],
          ['replays done / events replayed', ...counted((c) => `${c.replayed} / ${c.events}`)],
          [
            'replayed events/s (MB/s)',
            ...counted((c, seconds) => `${fixed(c.events / seconds, 0)} (${fixed(c.bytes / seconds / 1e6)})`),
          ],
          [
            'flood closes (code: n)',
            ...counted((c) => [...c.closes].map(([code, n]) => `${code}: ${n}`).join(', ') || 'none'),
          ],
        ],
        TARGET_P99_MS,
      );
      console.log(
        `Koa hello baseline: ${fixed(helloRun.healthz.okPerSecond + helloRun.wallet.okPerSecond, 0)} req/s (two loads together)`,
      );
      for (const flooded of results.slice(1))
        record({
          benchmark: 'replay-flood',
          scenario: `bystander during 1,000 subscribes ${flooded.name}, ${RETAINED.toLocaleString('en-US')} retained events, ${kind}`,
          ...bystanderFigures(helloRun, results[0], flooded),
          targets: [{ figure: 'bystander p99', below: TARGET_P99_MS, source: 'finding 13.2' }],
        });
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

/**
 * 50 connections of `stormer` sending 20 subscribes each from `lastEventId`, again every
 * BURST_EVERY_MS while answers come back; counts what they are sent (bytes only, no parsing).
 */
async function flood(url: string, stormer: Session, lastEventId: string) {
  const counts: FloodCounts = {
    subscribes: 0,
    resyncs: 0,
    subscribed: 0,
    replayed: 0,
    events: 0,
    bytes: 0,
    closes: new Map(),
  };
  let stopping = false;
  const sockets: LeanWebSocket[] = await Promise.all(
    Array.from({ length: CONNECTIONS }, () =>
      connectLean(url, stormer.headers, {
        message(data, start, end) {
          counts.bytes += end - start;
          const head = data.subarray(start, Math.min(end, start + 64));
          if (head.indexOf(EVENT) === 0) counts.events++;
          else if (head.includes(RESYNC)) counts.resyncs++;
          else if (head.includes(SUBSCRIBED)) counts.subscribed++;
          else if (data.subarray(start, end).includes(REPLAYED)) counts.replayed++;
        },
        close(code) {
          if (!stopping) counts.closes.set(code, (counts.closes.get(code) ?? 0) + 1);
        },
      }),
    ),
  );
  const subscribe = JSON.stringify({ type: 'subscribe', lastEventId });
  const burst = () => {
    for (const ws of sockets) {
      if (ws.closed) continue;
      for (let n = 0; n < SUBSCRIBES_PER_CONNECTION; n++) ws.send(subscribe);
      counts.subscribes += SUBSCRIBES_PER_CONNECTION;
    }
  };
  burst();
  // Resubscribing only makes sense where subscribes are refused (resync): replays keep running.
  const timer = lastEventId === '0' ? setInterval(burst, BURST_EVERY_MS) : null;
  return {
    counts,
    stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      for (const ws of sockets) ws.terminate();
    },
  };
}

/** A stormer, a bystander holding one currency, and RETAINED events; returns the newest event id. */
async function prepare(service: Service): Promise<{ stormer: Session; bystander: Session; newest: number }> {
  const studio = await createUser(service, 'studio');
  await createCollection(service, studio, 'bench-flood');
  await createCurrency(service, studio, ASSET, 'bench-flood');
  const [stormer, bystander] = [await createUser(service), await createUser(service)];
  await mint(service, studio, ASSET, bystander.wallet, '1000000');
  await transfer(service, bystander, stormer.wallet);
  // Copies of that transfer's event, in one statement; the ids come from the table's own sequence.
  const columns = 'type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet';
  const copies =
    service.kind === 'postgres'
      ? `insert into outbox_event (${columns}) select ${columns} from outbox_event, generate_series(1, ${RETAINED}) where id = (select max(id) from outbox_event)`
      : `insert into outbox_event (${columns}) with recursive n(i) as (select 1 union all select i + 1 from n where i < ${RETAINED}) select ${columns} from outbox_event, n where id = (select max(id) from outbox_event)`;
  const insertStarted = performance.now();
  await service.execute(copies);
  // A real transfer after them: once a live subscriber has its event, the relay has read past all.
  let resolveSeen: (id: number) => void = () => {};
  const seen = new Promise<number>((resolve) => {
    resolveSeen = resolve;
  });
  const wsUrl = `${service.baseUrl.replace(/^http/, 'ws')}/ws`;
  let subscribed = false;
  const watcher = await connectLean(wsUrl, bystander.headers, {
    message(data, start, end) {
      const text = data.toString('utf8', start, end);
      if (text.includes('"type":"subscribed"')) subscribed = true;
      const match = /"id":"(\d+)"/.exec(text);
      if (text.startsWith('{"subscriptionIds"') && match) resolveSeen(Number(match[1]));
    },
    close() {},
  });
  // The copies concern the bystander and the stormer, not the studio.
  watcher.send(JSON.stringify({ type: 'subscribe', events: ['newTransfer'], walletId: studio.wallet }));
  while (!subscribed) await new Promise((resolve) => setTimeout(resolve, 20));
  await transfer(service, bystander, studio.wallet);
  const newest = await seen;
  watcher.terminate();
  console.log(
    `setup: ${RETAINED} events inserted and read past by the relay in ${fixed((performance.now() - insertStarted) / 1000)} s; newest event ${newest}`,
  );
  return { stormer, bystander, newest };
}

function transfer(service: Service, from: Session, to: string) {
  return call(service.baseUrl, 'POST', '/api/v1/transfer', {
    session: from,
    body: { assetId: ASSET, from: from.wallet, to, amount: '1' },
  });
}

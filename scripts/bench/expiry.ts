// Expiry (issue 36): 100,000 rentals reaching their end time at the same instant. The studio mints
// the rentals (timed grants, `expiresAt` an hour ahead) to the 100 funded wallets in batch mints of
// 100; then one run of single transfers (50 clients, as the transfers benchmark) measures the traffic
// alone, and a second run starts as every rental's end time is moved to the same instant (behind
// the service's back, as time would move it) and the service's own market keeper (every instance,
// each MARKET_SWEEP_MS, default 5 s) burns them, up to 50 a plan. It reports how long after that
// instant the last rental was burned (and the rate), and the transfers' rate and p99 latency during
// the expiry beside the run before it. The ledger's invariants are checked after.
//
// BENCH_RENTALS sets another number of rentals (a quick run: BENCH_RENTALS=5000).
import { call, type Session } from '../lib/api.ts';
import { forEachLimit } from '../lib/concurrency.ts';
import { startService } from '../lib/service.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record } from './lib/record.ts';
import { heading, loadTable } from './lib/report.ts';
import { COLLECTION, checkInvariants, fundedUsers, randomTransfersFrom } from './transfers.ts';

const RENTALS = Number(process.env.BENCH_RENTALS ?? 100_000);
const PER_BATCH = 100;
const CLIENTS = 50;
/** The longest wait for the last rental before the run is called failed. */
const DEADLINE_MS = 15 * 60_000;

export async function expiry(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const service = await startService(kind);
    try {
      let studio: Session | undefined;
      const users = await fundedUsers(service, async (s) => {
        studio = s;
      });
      const owner = studio as Session;
      const later = new Date(Date.now() + 3_600_000).toISOString();
      const started = performance.now();
      await forEachLimit(
        Array.from({ length: Math.ceil(RENTALS / PER_BATCH) }, (_, i) => i),
        4,
        async (batch) => {
          const count = Math.min(PER_BATCH, RENTALS - batch * PER_BATCH);
          await call(service.baseUrl, 'POST', `/api/v1/collections/${COLLECTION}/mint/batch`, {
            session: owner,
            body: {
              items: Array.from({ length: count }, (_, i) => ({
                to: users[(batch * PER_BATCH + i) % users.length].wallet,
                nft: {
                  name: 'Rented Glider',
                  metadata: { image: 'https://cdn.example.com/glider.png', attributes: [], creator: 'Bench' },
                  expiresAt: later,
                },
              })),
            },
          });
        },
      );
      const mintSeconds = (performance.now() - started) / 1000;
      const remaining = () => service.count('select count(*) as n from asset where expires_at is not null');
      if ((await remaining()) !== RENTALS) throw new Error('the rentals were not all minted');

      const load: LoadOptions = {
        label: 'POST /api/v1/transfer',
        url: `${service.baseUrl}/api/v1/transfer`,
        connections: CLIENTS,
        durationSeconds: options.durationSeconds,
        setupClient: randomTransfersFrom(users),
        serverPid: service.pid,
      };
      heading(`expiry on ${kind}`, {
        rentals: RENTALS,
        'minted in (s)': mintSeconds.toFixed(1),
        clients: CLIENTS,
        'seconds per run': options.durationSeconds,
      });
      await warmUp(load);
      const alone = await runLoad({ ...load, label: 'transfers alone' });

      // Every end time at one instant, a second from now (SQLite stores epoch milliseconds).
      const instant = Date.now() + 1000;
      await service.execute(
        kind === 'sqlite'
          ? `update asset set expires_at = ${instant} where expires_at is not null`
          : `update asset set expires_at = to_timestamp(${instant / 1000}) where expires_at is not null`,
      );
      // Runs of transfers back to back until the last rental is gone: the traffic beside the expiry.
      let doneAt = 0;
      const watched = (async () => {
        while (performance.now() - started < DEADLINE_MS + mintSeconds * 1000) {
          if ((await remaining()) === 0) {
            doneAt = Date.now();
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      })();
      const runs: LoadResult[] = [];
      do runs.push(await runLoad({ ...load, label: `transfers during the expiry (${runs.length + 1})` }));
      while (!doneAt && performance.now() - started < DEADLINE_MS + mintSeconds * 1000);
      await watched;
      loadTable([alone, ...runs]);
      if (!doneAt) throw new Error(`rentals still not expired after ${DEADLINE_MS / 60_000} min`);
      const duringResult = {
        okPerSecond: runs.reduce((n, r) => n + r.ok, 0) / (runs.length * options.durationSeconds),
        p99: Math.max(...runs.map((r) => r.p99)),
      };
      const seconds = (doneAt - instant) / 1000;
      console.log(
        `${RENTALS} rentals expired ${seconds.toFixed(1)} s after their end time (${(RENTALS / seconds).toFixed(0)}/s, ` +
          `the first pass starting within MARKET_SWEEP_MS of it); transfers ${alone.okPerSecond.toFixed(0)}/s ` +
          `alone, ${duringResult.okPerSecond.toFixed(0)}/s during (p99 ${alone.p99} ms, ${duringResult.p99} ms)`,
      );
      await checkInvariants(service, users);
      record({
        benchmark: 'expiry',
        scenario: `${RENTALS} rentals ending at one instant, ${CLIENTS} clients of transfers, ${kind}, invariants held`,
        figures: [
          { name: 'all expired after', value: Math.round(seconds * 10) / 10, unit: 's' },
          { name: 'expiries', value: Math.round(RENTALS / seconds), unit: '/s' },
          { name: 'transfers alone', value: Math.round(alone.okPerSecond), unit: '/s' },
          { name: 'transfers during', value: Math.round(duringResult.okPerSecond), unit: '/s' },
          { name: 'p99 alone', value: alone.p99, unit: 'ms' },
          { name: 'p99 during', value: duringResult.p99, unit: 'ms' },
        ],
      });
    } finally {
      await service.stop();
    }
  }
}

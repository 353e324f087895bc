// Outage scenarios for `npm run chaos -- --scenario database-outage|redis-outage|outages`: the
// service as a child process on PostgreSQL and Redis, each reached through a fault proxy
// (fault-proxy.ts; the shared servers keep running), under transfers, reads and logins from
// concurrent clients. Each outage refuses every connection to the dependency for a while, then heals;
// the run records every answer and how long the service took to serve normally again. Failures: a
// 5xx other than the outage's own 503 problem types (none at all for Redis), or a recovery slower
// than 5 s.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Session } from '../../lib/api.ts';
import { freePort, startNodeChild } from '../../lib/children.ts';
import { createDatabase } from '../../lib/database.ts';
import type { Service } from '../../lib/service.ts';
import { serviceEnv } from '../../lib/service.ts';
import { startFaultProxy } from './fault-proxy.ts';
import { formatUnits, setUpLedger } from './ledger-setup.ts';

export type OutageKind = 'database' | 'redis';

export interface OutageOptions {
  /** The outages, in order. */
  outages: OutageKind[];
  /** How long each outage lasts. */
  outageMs: number;
  clients: number;
  redisUrl?: string;
  log: (line: string) => void;
}

export interface OutageReport {
  outages: { kind: OutageKind; outageMs: number; recoveryMs: number }[];
  /** Answers by "status problem-type" while the run lasted. */
  answers: Record<string, number>;
  failures: string[];
}

/** The outage's own answers: anything else with status >= 500 is a failure. */
const DATABASE_OUTAGE_TYPES = new Set([
  '/problems/database-unavailable',
  '/problems/outcome-unknown',
  '/problems/timeout',
]);
const RECOVERY_LIMIT_MS = 5_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runOutageTest(options: OutageOptions): Promise<OutageReport> {
  const redisUrl = new URL(options.redisUrl ?? 'redis://127.0.0.1:6379');
  const database = await createDatabase('postgres');
  const databaseUrl = new URL(database.env.DATABASE_URL);
  const pg = await startFaultProxy({ host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) });
  const redis = await startFaultProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
  const port = await freePort();
  const env = {
    ...serviceEnv({ ...database.env, DATABASE_URL: pg.via(databaseUrl.href) }, port),
    REDIS_URL: redis.via(redisUrl.href),
    REDIS_KEY_PREFIX: `gats-chaos-${randomBytes(4).toString('hex')}:`,
    DATABASE_CONNECT_TIMEOUT_MS: '1000',
    REQUEST_TIMEOUT_MS: '3000',
  };
  const report: OutageReport = { outages: [], answers: {}, failures: [] };
  const child = await startNodeChild({
    name: 'service (outages)',
    script: 'src/server.ts',
    port,
    env,
    readyPath: '/healthz',
  });
  const service: Service = {
    ...child,
    kind: 'postgres',
    env,
    setRole: (userId, role) => database.setRole(userId, role),
    execute: (sql) => database.execute(sql),
    count: (sql) => database.count(sql),
    stopProcess: () => child.stop(),
  };
  try {
    const ledger = await setUpLedger(service, { players: 4, currencies: 1 });
    const [currency] = ledger.currencies;
    const request = async (path: string, session: Session | null, body?: unknown) => {
      const headers: Record<string, string> = { ...session?.headers };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['idempotency-key'] = randomUUID();
      }
      const response = await fetch(child.baseUrl + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      }).catch(() => null);
      if (!response) return { status: 0, type: 'connection failed' };
      const text = await response.text();
      const type = response.status >= 400 ? (JSON.parse(text || '{}') as { type?: string }).type : undefined;
      return { status: response.status, type };
    };

    let current: OutageKind | null = null;
    let stop = false;
    /** `during`: the outage under way when the request was sent or answered. */
    const record = (answer: { status: number; type?: string }, during: OutageKind | null) => {
      const key = `${answer.status}${answer.type ? ` ${answer.type}` : ''}`;
      report.answers[key] = (report.answers[key] ?? 0) + 1;
      const expected =
        (answer.status > 0 && answer.status < 500 && answer.status !== 429) ||
        (answer.status === 503 && DATABASE_OUTAGE_TYPES.has(answer.type ?? '') && during === 'database');
      if (!expected && report.failures.length < 20)
        report.failures.push(`${key} during ${during ? `a ${during} outage` : 'normal operation'}`);
    };
    const client = async (index: number) => {
      const player = ledger.players[index % ledger.players.length];
      const other = ledger.players[(index + 1) % ledger.players.length];
      for (let turn = 0; !stop; turn++) {
        const before = current;
        const answer =
          turn % 3 === 0
            ? await request('/api/v1/transfer', player, {
                assetId: currency,
                from: player.wallet,
                to: other.wallet,
                amount: formatUnits(1n),
              })
            : await request(turn % 3 === 1 ? `/wallets/${player.wallet}/assets` : '/api/v1/me', player);
        record(answer, before ?? current);
      }
    };
    const clients = Array.from({ length: options.clients }, (_, index) => client(index));

    for (const kind of options.outages) {
      await sleep(500);
      const proxy = kind === 'database' ? pg : redis;
      options.log(`${kind} outage for ${options.outageMs} ms`);
      current = kind;
      proxy.refuse();
      await sleep(options.outageMs);
      proxy.heal();
      const healed = Date.now();
      // Serving normally again: ready, Redis in use (for a Redis outage), a transfer answered.
      let recoveryMs = -1;
      while (Date.now() - healed < RECOVERY_LIMIT_MS * 2) {
        const ready = await fetch(`${child.baseUrl}/readyz`)
          .then(async (response) => ({
            status: response.status,
            body: (await response.json()) as { checks: Record<string, string> },
          }))
          .catch(() => null);
        const redisBack = kind !== 'redis' || ready?.body.checks.redis === 'ok';
        if (ready?.status === 200 && redisBack) {
          const transfer = await request('/api/v1/transfer', ledger.players[0], {
            assetId: currency,
            from: ledger.players[0].wallet,
            to: ledger.players[1].wallet,
            amount: formatUnits(1n),
          });
          if (transfer.status === 201) {
            recoveryMs = Date.now() - healed;
            break;
          }
        }
        await sleep(50);
      }
      current = null;
      options.log(`${kind} outage over: serving normally after ${recoveryMs} ms`);
      report.outages.push({ kind, outageMs: options.outageMs, recoveryMs });
      if (recoveryMs < 0 || recoveryMs > RECOVERY_LIMIT_MS)
        report.failures.push(
          `${kind} outage: not serving normally within ${RECOVERY_LIMIT_MS} ms of its end`,
        );
    }
    await sleep(500);
    stop = true;
    await Promise.all(clients);
  } finally {
    await child.stop();
    await pg.close();
    await redis.close();
    await database.drop();
  }
  return report;
}

export function printOutageReport(report: OutageReport): void {
  console.log('outage scenarios');
  for (const outage of report.outages)
    console.log(
      `  ${outage.kind} away ${outage.outageMs} ms: serving normally ${outage.recoveryMs} ms after its return`,
    );
  console.log(`  answers: ${JSON.stringify(report.answers)}`);
  console.log(
    report.failures.length === 0 ? '  no failures' : `  FAILURES:\n    ${report.failures.join('\n    ')}`,
  );
}

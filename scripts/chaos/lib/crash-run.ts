// One crash-test run: the service on a fresh database, a ledger, resuming subscribers, concurrent
// writers, `kill -9` at random moments with a restart on the same database each time, then the
// verification. Returns the figures and the list of failures (empty when nothing was lost,
// duplicated or broken).
import { createUser } from '../../lib/api.ts';
import type { DbKind } from '../../lib/database.ts';
import { type CrashableService, startCrashableService } from './crashable-service.ts';
import { setUpLedger } from './ledger-setup.ts';
import { newestEventId } from './rest.ts';
import { ResumingSubscriber, type SubscriptionSpec } from './subscriber.ts';
import { type Findings, verify } from './verify.ts';
import { type WriteRequest, Writers } from './writes.ts';

export interface CrashOptions {
  db: DbKind;
  kills: number;
  durationSeconds: number;
  /** Concurrent writing clients. */
  clients: number;
  players: number;
  /** Optional: events and rate limits through Redis, as in a multi-instance deployment. */
  redisUrl?: string;
  log: (line: string) => void;
}

export interface RequestFigures {
  sent: number;
  attempts: number;
  ok: number;
  /** Final 4xx answers, by status. */
  rejected: Record<string, number>;
  neverAnswered: number;
  /** Requests that needed more than one send, and sends that got no answer. */
  retried: number;
  unansweredSends: number;
  /** Final answers that were the stored answer of an earlier send (`Idempotent-Replayed`). */
  replayed: number;
  /** 5xx answers (each retried), by status. */
  serverErrors: Record<string, number>;
}

export interface CrashReport {
  options: Omit<CrashOptions, 'log'>;
  /** Milliseconds from each restart to the first 200 of /healthz. */
  restartMs: number[];
  requests: RequestFigures;
  findings: Findings;
  failures: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runCrashTest(options: CrashOptions): Promise<CrashReport> {
  const { log } = options;
  const service = await startCrashableService(
    options.db,
    options.redisUrl ? { REDIS_URL: options.redisUrl } : {},
  );
  const subscribers: ResumingSubscriber[] = [];
  try {
    log(`service (${options.db}${options.redisUrl ? ' + Redis' : ''}) up at ${service.baseUrl}; setting up`);
    const ledger = await setUpLedger(service, { players: options.players, currencies: 2 });
    const reader = await createUser(service);
    const watermark = await newestEventId(service.baseUrl, reader);

    const specs: SubscriptionSpec[] = [
      { name: 'all events' },
      ...ledger.players
        .slice(0, 3)
        .map((player, index) => ({ name: `wallet ${index + 1}`, walletId: player.wallet })),
      { name: `${ledger.currencies[0]} transfers`, events: ['newTransfer'], assetId: ledger.currencies[0] },
      { name: 'prices', events: ['priceUpdate'] },
    ];
    const wsUrl = `${service.baseUrl.replace(/^http/, 'ws')}/ws`;
    for (const spec of specs)
      subscribers.push(new ResumingSubscriber(wsUrl, reader.headers, spec, watermark));
    await Promise.all(subscribers.map((subscriber) => subscriber.start()));

    const writers = new Writers(service, ledger, {
      clients: options.clients,
      requestTimeoutMs: 10_000,
      giveUpMs: 120_000,
    });
    log(
      `load: ${options.clients} writers, ${subscribers.length} subscribers, ${options.kills} kills in ${options.durationSeconds} s`,
    );
    const load = writers.run();
    const restartMs = await killRepeatedly(service, options, () => writers.requests.length);
    writers.stop();
    await load;
    log(`load stopped after ${writers.requests.length} requests; verifying`);

    const findings = await verify({
      baseUrl: service.baseUrl,
      reader,
      ledger,
      requests: writers.requests,
      watermark,
      subscribers,
      catchUpTimeoutMs: 30_000,
    });
    log('verified');
    const requests = requestFigures(writers.requests);
    const { log: _log, ...settings } = options;
    return {
      options: settings,
      restartMs,
      requests,
      findings,
      failures: failuresOf(requests, findings, restartMs.length, options.kills),
    };
  } finally {
    for (const subscriber of subscribers) subscriber.close();
    await service.stop();
  }
}

/**
 * Kills the service `kills` times at random moments spread over the duration (each one somewhere in
 * the later 70% of an even share of the time left, so load always runs between kills) and restarts
 * it each time after a random pause of up to a second.
 */
async function killRepeatedly(
  service: CrashableService,
  options: CrashOptions,
  requestsSoFar: () => number,
): Promise<number[]> {
  const end = Date.now() + options.durationSeconds * 1000;
  const restartMs: number[] = [];
  for (let kill = 1; kill <= options.kills; kill++) {
    const share = Math.max(0, end - Date.now()) / (options.kills - kill + 2);
    await sleep(share * (0.3 + 0.7 * Math.random()));
    await service.kill9();
    const down = Math.floor(Math.random() * 1000);
    await sleep(down);
    const took = await service.restart();
    restartMs.push(took);
    options.log(
      `kill ${kill}/${options.kills} after ${requestsSoFar()} requests; down ${down} ms, restart answered in ${took} ms`,
    );
  }
  await sleep(Math.max(0, end - Date.now()));
  return restartMs;
}

export function requestFigures(requests: readonly WriteRequest[]): RequestFigures {
  const count = (map: Record<string, number>, key: number) => {
    map[key] = (map[key] ?? 0) + 1;
  };
  const rejected: Record<string, number> = {};
  const serverErrors: Record<string, number> = {};
  for (const request of requests) {
    if (request.status !== undefined && request.status >= 400) count(rejected, request.status);
    for (const status of request.serverErrors) count(serverErrors, status);
  }
  return {
    sent: requests.length,
    attempts: requests.reduce((sum, request) => sum + request.attempts, 0),
    ok: requests.filter((request) => request.status !== undefined && request.status < 300).length,
    rejected,
    neverAnswered: requests.filter((request) => request.status === undefined).length,
    retried: requests.filter((request) => request.attempts > 1).length,
    unansweredSends: requests.reduce((sum, request) => sum + request.unanswered, 0),
    replayed: requests.filter((request) => request.replayed).length,
    serverErrors,
  };
}

export function failuresOf(
  requests: RequestFigures,
  findings: Findings,
  kills: number,
  wanted: number,
): string[] {
  const failures: string[] = [];
  const fail = (condition: boolean, message: string) => {
    if (condition) failures.push(message);
  };
  const { transfers, prices } = findings;
  fail(kills < wanted, `only ${kills} of ${wanted} kills happened`);
  fail(requests.neverAnswered > 0, `${requests.neverAnswered} requests never got an answer`);
  fail(
    Object.keys(requests.serverErrors).length > 0,
    `5xx answers: ${JSON.stringify(requests.serverErrors)}`,
  );
  // Every request is valid and balances are ample: a 4xx means the service refused a good request.
  fail(Object.keys(requests.rejected).length > 0, `4xx answers: ${JSON.stringify(requests.rejected)}`);
  fail(
    transfers.found !== transfers.acknowledged,
    `${transfers.acknowledged - transfers.found} acknowledged transfers missing or different in GET /api/v1/transfers/{id}`,
  );
  fail(
    transfers.missingEvents.length > 0,
    `acknowledged transfers without an event: ${transfers.missingEvents.slice(0, 5)}`,
  );
  fail(
    transfers.unacknowledged.length > 0,
    `committed transfers no client got a 2xx for (doubled retries?): ${JSON.stringify(transfers.unacknowledged.slice(0, 3))}`,
  );
  fail(
    transfers.duplicateEvents.length > 0,
    `transfers with several events: ${transfers.duplicateEvents.slice(0, 5)}`,
  );
  fail(
    transfers.walletHistoryMismatches.length > 0,
    `wallet histories differ: ${transfers.walletHistoryMismatches.slice(0, 3).join('; ')}`,
  );
  fail(
    prices.missing > 0 || prices.extra > 0,
    `price events: ${prices.missing} missing, ${prices.extra} extra`,
  );
  for (const supply of findings.supplies) {
    fail(
      supply.sumOfBalances !== supply.totalSupply || supply.totalSupply !== supply.expectedSupply,
      `${supply.currency}: sum of balances ${supply.sumOfBalances}, totalSupply ${supply.totalSupply}, expected ${supply.expectedSupply}`,
    );
    fail(supply.negativeBalances > 0, `${supply.currency}: ${supply.negativeBalances} negative balances`);
    fail(
      supply.balanceMismatches > 0,
      `${supply.currency}: ${supply.balanceMismatches} balances differ from the acknowledged history`,
    );
  }
  for (const subscriber of findings.subscribers) {
    const { name, duplicates, outOfOrder, gaps, unexpected, problems, missing } = subscriber;
    fail(
      duplicates + outOfOrder + gaps + unexpected > 0,
      `subscriber "${name}": ${gaps} gaps, ${duplicates} duplicates, ${outOfOrder} out of order, ${unexpected} unexpected` +
        (missing.length > 0 ? `; missing ${missing.join('; ')}` : ''),
    );
    fail(problems.length > 0, `subscriber "${name}": ${problems.join('; ')}`);
  }
  return failures;
}

// Sends generated requests to the running app, a few at a time, and judges every answer: no 5xx, and
// (outside oidc-provider) a status, media type and body the contract declares for the operation.
// Afterwards the service must still be ready and the ledger's invariants must still hold.
import fc from 'fast-check';
import type { Orm } from '../../../src/db/orm.ts';
import type { TestApp } from '../../helpers/app.ts';
import { assertMatchesContract } from '../../helpers/contract.ts';
import { checkInvariants } from '../../helpers/ledger-fixtures.ts';
import { operations } from './contract.ts';
import { type FuzzRequest, requestArbitrary } from './requests.ts';
import type { World } from './world.ts';

export interface Finding {
  request: FuzzRequest;
  status: number;
  message: string;
}

export interface CampaignReport {
  seed: number;
  requests: number;
  durationMs: number;
  /** operationId -> status -> count. */
  perOperation: Map<string, Map<number, number>>;
  statuses: Map<number, number>;
  mutations: Map<string, number>;
  serverErrors: Finding[];
  violations: Finding[];
  /** Status of GET /readyz after the run. */
  readiness: number;
  /** Ledger invariants broken after the run (should be none). */
  invariants: string[];
}

export interface CampaignOptions {
  requests: number;
  seed: number;
  concurrency: number;
  onProgress?: (sent: number) => void;
}

const BATCH = 200;
const TIMEOUT_MS = 30_000;

/**
 * One turn of the event loop (its timers and I/O included) before the campaign goes on. The campaign
 * shares the loop with the app under test and with fetch's pool of keep-alive connections, and
 * making requests is CPU work: about 1.5 s of it before the first request, several times that on a
 * loaded machine. Done in one go, it froze every timer: fetch could not retire the connections the
 * world was built on (it does so 2 s before the server's announced `Keep-Alive: timeout=5`), the
 * campaign then sent its first requests on them, and the server's overdue 5 s idle timers closed them
 * with those requests unread, which the kernel answers with a reset: `-> 0 ... read ECONNRESET` on
 * ordinary requests. Turning the loop between pieces of work keeps both sides' timers on time, and
 * a turn before each batch goes out lets fetch retire what expired meanwhile.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const bump = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);

export async function runCampaign(
  t: TestApp,
  world: World,
  options: CampaignOptions,
): Promise<CampaignReport> {
  const perOperation = new Map<string, Map<number, number>>();
  const statuses = new Map<number, number>();
  const mutations = new Map<string, number>();
  const serverErrors: Finding[] = [];
  const violations: Finding[] = [];
  // Each operation's requests, built once (for its first request and for the random draws), with a
  // turn of the event loop after each (see `turn`).
  const arbitraries: fc.Arbitrary<FuzzRequest>[] = [];
  for (const op of operations()) {
    arbitraries.push(requestArbitrary(op, world));
    await turn();
  }
  // Every operation equally often: the rare ones are where the bugs hide.
  const anyRequest = fc.oneof(...arbitraries);

  async function judge(request: FuzzRequest): Promise<void> {
    let status = 0;
    try {
      const response = await fetch(t.baseUrl + request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      status = response.status;
      const text = await response.text();
      const contentType = response.headers.get('content-type') ?? '';
      if (status >= 500) serverErrors.push({ request, status, message: text.slice(0, 300) });
      if (!request.oauth) {
        let body: unknown = text === '' ? undefined : text;
        if (/json/.test(contentType) && text !== '') body = JSON.parse(text);
        // Judge the path fetch really sent: URL parsing resolves dot segments (`/assets/%2e%2e` is `/`).
        assertMatchesContract(
          request.method,
          new URL(t.baseUrl + request.url).pathname,
          { status, contentType, body, headers: response.headers },
          t.app.router.implemented,
        );
      }
    } catch (error) {
      // No answer at all (status 0) is a finding too: say why the connection failed.
      const cause =
        error instanceof Error && error.cause
          ? `: ${String((error.cause as Error).message ?? error.cause)}`
          : '';
      violations.push({
        request,
        status,
        message: `${error instanceof Error ? error.message : String(error)}${cause}`,
      });
    } finally {
      bump(statuses, status);
      bump(mutations, request.mutation);
      const counts = perOperation.get(request.operationId) ?? new Map<number, number>();
      perOperation.set(request.operationId, bump(counts, status));
    }
  }

  // One request of each operation first, so that every operation is exercised whatever the seed
  // (500 draws over 74 operations miss one about once in twelve seeds); then random draws.
  const firsts: FuzzRequest[] = [];
  for (const [index, arbitrary] of arbitraries.entries()) {
    firsts.push(fc.sample(arbitrary, { seed: (options.seed ^ index) | 0, numRuns: 1 })[0]);
    await turn();
  }
  const started = performance.now();
  let sent = 0;
  for (let batch = 0; sent < options.requests; batch++) {
    const size = Math.min(BATCH, options.requests - sent);
    // A seed per batch, mixed so that runs with neighbouring seeds do not share batches.
    const batchSeed = (options.seed ^ Math.imul(batch + 1, 0x9e3779b1)) | 0;
    const queue = firsts.splice(0, size);
    queue.push(...fc.sample(anyRequest, { seed: batchSeed, numRuns: size - queue.length }));
    await turn();
    const workers = Array.from({ length: options.concurrency }, async () => {
      for (let request = queue.shift(); request; request = queue.shift()) await judge(request);
    });
    await Promise.all(workers);
    sent += size;
    options.onProgress?.(sent);
  }
  const durationMs = performance.now() - started;

  const readiness = (await fetch(`${t.baseUrl}/readyz`)).status;
  const invariants = await checkInvariants(t.app.orm as unknown as Orm);
  return {
    seed: options.seed,
    requests: sent,
    durationMs,
    perOperation,
    statuses,
    mutations,
    serverErrors,
    violations,
    readiness,
    invariants,
  };
}

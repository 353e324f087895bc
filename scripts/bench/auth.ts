// Per-request cost of access control (bearer JWT + API key), measured two ways:
// 1. Over HTTP: GET /healthz (public) against GET /api/v1/me (bearer + API key) on the service, beside
//    the Koa hello baseline; the difference of their per-request service times (1/throughput, the
//    server being the bottleneck) is what authentication plus the handler's user read cost.
// 2. In-process: the app built with buildApp() on the same database (after the child has stopped)
//    and its authenticator called directly, in a loop, with the same token and key: the cost of
//    verifying the token (signature, claims) and resolving the key (cached), and the rate limiter.
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/index.ts';
import {
  bundledOperations,
  type ContractOperation,
  type OperationGuard,
} from '../../src/contract/operations.ts';
import { createUser, type Session } from '../lib/api.ts';
import { startService } from '../lib/service.ts';
import { startHello } from './lib/hello.ts';
import { type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record, round4 } from './lib/record.ts';
import { fixed, heading, loadTable, ratio } from './lib/report.ts';

/** What GET /wallets/{wallet_id}/assets asks of its caller (bearer with assets:read and an API key). */
const GUARD: OperationGuard = (bundledOperations().byId.get('listWalletAssets') as ContractOperation).guard;
const IN_PROCESS_CALLS = 20_000;

export async function auth(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    let user: Session;
    try {
      user = await createUser(service);
      const base = { connections: options.connections, durationSeconds: options.durationSeconds };
      const targets = [
        { ...base, label: 'Koa hello GET /', url: `${hello.baseUrl}/` },
        { ...base, label: 'GET /healthz (public)', url: `${service.baseUrl}/healthz` },
        {
          ...base,
          label: 'GET /api/v1/me (bearer+key)',
          url: `${service.baseUrl}/api/v1/me`,
          headers: user.headers,
        },
      ];
      heading(`auth on ${kind}`, {
        connections: options.connections,
        'seconds per run': options.durationSeconds,
      });
      for (const target of targets) await warmUp(target);
      const results: LoadResult[] = [];
      for (const target of targets) results.push(await runLoad(target));
      loadTable(results);
      const [helloResult, health, me] = results;
      ratio('GET /healthz', health.okPerSecond, helloResult.okPerSecond);
      ratio('GET /api/v1/me', me.okPerSecond, helloResult.okPerSecond);
      const extra = 1e6 / me.okPerSecond - 1e6 / health.okPerSecond;
      console.log(
        `authenticated minus public, per request: ${fixed(extra, 0)} µs of service time ` +
          '(token + API key verification, rate limit, and reading the user for /me)',
      );
      await service.stopProcess();
      const perCall = await timeAuthenticatorInProcess(service.env, user);
      record({
        benchmark: 'auth',
        scenario: `GET /api/v1/me (bearer + key) against GET /healthz, and the authenticator in-process, ${kind}`,
        koaRatio: round4(me.okPerSecond / helloResult.okPerSecond),
        figures: [
          { name: 'GET /api/v1/me', value: Math.round(me.okPerSecond), unit: 'req/s' },
          { name: 'GET /healthz', value: Math.round(health.okPerSecond), unit: 'req/s' },
          { name: 'authenticated minus public', value: Math.round(extra), unit: 'µs' },
          { name: 'authenticator in-process', value: Number(perCall.toFixed(1)), unit: 'µs' },
        ],
      });
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

/** Calls the real authenticator IN_PROCESS_CALLS times, one after the other, and prints µs per call. */
async function timeAuthenticatorInProcess(env: Record<string, string>, user: Session): Promise<number> {
  const app = await buildApp(loadConfig(env));
  try {
    const request = new IncomingMessage(new Socket());
    request.method = 'GET';
    request.url = `/wallets/${user.wallet}/assets`;
    request.headers = {
      host: new URL(env.PUBLIC_URL).host,
      authorization: `Bearer ${user.token}`,
      'x-api-key': user.apiKey,
    };
    const ctx = app.koa.createContext(request, new ServerResponse(request));
    const authenticate = () => app.auth.authenticator.authenticate(ctx, GUARD);
    for (let index = 0; index < 1000; index++) await authenticate(); // warm: JIT, key cache
    const started = process.hrtime.bigint();
    for (let index = 0; index < IN_PROCESS_CALLS; index++) await authenticate();
    const perCall = Number(process.hrtime.bigint() - started) / 1000 / IN_PROCESS_CALLS;
    console.log(
      `in-process authenticator (bearer JWT + API key + rate limit), ${IN_PROCESS_CALLS} calls: ${fixed(perCall, 1)} µs per request`,
    );
    return perCall;
  } finally {
    await app.close();
  }
}

// Health, readiness, metrics and the published contracts.
import { readFileSync } from 'node:fs';
import { getAddress } from 'viem/utils';
import type { ChainStatus } from '../../chain/indexer.ts';
import { ASYNCAPI_PATH, OPENAPI_PATH } from '../../contract/operations.ts';
import type { Metrics } from '../../observability/metrics.ts';
import { type HandlerMap, type ResponseBody, respond, typedHandlers } from '../handler.ts';
import { publishedAsyncApi, publishedOpenApi } from '../published-contracts.ts';
import { allowHtmlPage } from '../security-headers.ts';

export interface OperationsDeps {
  metrics: Metrics;
  /** Resolves when the database answers; rejects otherwise. */
  pingDatabase: () => Promise<void>;
  /** Redis answers now (absent without Redis). */
  redisAnswers?: () => Promise<boolean>;
  /** Whether the instance is shutting down (load balancers should stop routing here). */
  draining?: () => boolean;
  /** Per configured EVM chain: the indexer's view (src/chain/). */
  chains?: () => ChainStatus[];
  /** PUBLIC_URL: the server the published documents name. */
  publicUrl: string;
}

/** A database that has not answered in this time is reported failed (the pool may be waiting). */
const PING_TIMEOUT_MS = 2_000;

function chainReadiness(status: ChainStatus) {
  const block = (value: bigint | null) => (value === null ? null : Number(value));
  return {
    chainId: status.chainId,
    state: status.state,
    head: block(status.head),
    indexedBlock: block(status.indexedBlock),
    lag: block(status.lag),
    backfillingContracts: status.backfilling,
    suspendedContracts: status.suspended.map((contract) => ({
      address: getAddress(contract.address),
      reason: contract.reason,
      since: contract.since?.toISOString() ?? null,
    })),
  };
}

async function answersWithin(ping: () => Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      ping().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const DOCS_INDEX = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Game Asset Tracking Service — API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style>
</head><body>
<h1>Game Asset Tracking Service</h1>
<h2>Served by this instance</h2>
<ul>
<li><a href="/docs/openapi">REST API reference</a> (OpenAPI 3.1, <a href="/openapi.json">openapi.json</a>)</li>
<li><a href="/docs/asyncapi/">WebSocket API reference</a> (AsyncAPI 3.0, <a href="/asyncapi.json">asyncapi.json</a>)</li>
<li><a href="/.well-known/openid-configuration">OAuth 2.0 / OpenID discovery</a> and <a href="/jwks">signing keys</a></li>
<li><a href="/.well-known/did.json">the service's DID document</a> (did:web)</li>
<li><a href="/explorer/">the explorer</a></li>
</ul>
<h2>In the service's repository</h2>
<p>The rest of the documentation is Markdown in the repository, indexed in <code>docs/README.md</code>:
<code>docs/getting-started.md</code>; guides (<code>docs/guides/</code>: economy, living metadata,
crafting and trades, identity, OAuth, service accounts, webhooks, real-time events, on-chain assets);
operations (<code>docs/operations/</code>: deploy, configuration, several instances, backups and
restore, upgrades, monitoring, failures, security hardening, sizing); reference
(<code>docs/reference/</code>: the API as served, problem types, limits, metrics, log fields);
architecture (<code>docs/architecture/</code>).</p>
</body></html>
`;

export function operationsHandlers(deps: OperationsDeps): HandlerMap {
  // The published documents are read once; they change only with a new release.
  const openapi = publishedOpenApi(readFileSync(OPENAPI_PATH, 'utf8'), deps.publicUrl);
  const asyncapi = publishedAsyncApi(readFileSync(ASYNCAPI_PATH, 'utf8'), deps.publicUrl);
  return typedHandlers<
    | 'getHealth'
    | 'getReadiness'
    | 'getMetrics'
    | 'getOpenApiDocument'
    | 'getAsyncApiDocument'
    | 'getDocsIndex'
  >({
    getHealth(_request, ctx) {
      respond(ctx, 'getHealth', 200, { status: 'ok' });
    },
    async getReadiness(_request, ctx) {
      // Redis is optional at run time: while it is away the instance serves with per-instance
      // fallbacks, so it stays ready and says `degraded`.
      const database = (await answersWithin(deps.pingDatabase, PING_TIMEOUT_MS)) ? 'ok' : 'failed';
      const draining = deps.draining?.() ?? false;
      const ready = database === 'ok' && !draining;
      const body: ResponseBody<'getReadiness', 200 | 503> = {
        status: ready ? 'ok' : 'unavailable',
        checks: {
          database,
          ...(deps.redisAnswers ? { redis: (await deps.redisAnswers()) ? 'ok' : 'degraded' } : {}),
          ...(draining ? { shutdown: 'failed' } : {}),
        },
        ...(deps.chains && deps.chains().length > 0 ? { chains: deps.chains().map(chainReadiness) } : {}),
      };
      if (ready) respond(ctx, 'getReadiness', 200, body);
      else respond(ctx, 'getReadiness', 503, body);
    },
    async getMetrics(_request, ctx) {
      ctx.type = deps.metrics.registry.contentType;
      ctx.body = await deps.metrics.registry.metrics();
    },
    getOpenApiDocument(_request, ctx) {
      ctx.type = 'application/json';
      ctx.body = openapi;
    },
    getAsyncApiDocument(_request, ctx) {
      ctx.type = 'application/json';
      ctx.body = asyncapi;
    },
    getDocsIndex(_request, ctx) {
      allowHtmlPage(ctx, "default-src 'none'; style-src 'unsafe-inline'");
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = DOCS_INDEX;
    },
  });
}

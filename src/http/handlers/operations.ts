// Health, readiness, metrics and the published contracts.
import { readFileSync } from 'node:fs';
import type { Metrics } from '../../observability/metrics.ts';
import { ASYNCAPI_PATH, OPENAPI_PATH } from '../contract.ts';
import type { HandlerMap } from '../handler.ts';
import { allowHtmlPage } from '../security-headers.ts';

export interface OperationsDeps {
  metrics: Metrics;
  /** Resolves when the database answers; rejects otherwise. */
  pingDatabase: () => Promise<void>;
}

const DOCS_INDEX = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Game Asset Tracking Service — API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style>
</head><body>
<h1>Game Asset Tracking Service</h1>
<ul>
<li><a href="/docs/openapi">REST API reference</a> (OpenAPI 3.1, <a href="/openapi.json">openapi.json</a>)</li>
<li><a href="/docs/asyncapi/">WebSocket API reference</a> (AsyncAPI 3.0, <a href="/asyncapi.json">asyncapi.json</a>)</li>
</ul>
</body></html>
`;

export function operationsHandlers(deps: OperationsDeps): HandlerMap {
  // The published documents are read once; they change only with a new release.
  const openapi = readFileSync(OPENAPI_PATH, 'utf8');
  const asyncapi = readFileSync(ASYNCAPI_PATH, 'utf8');
  return {
    getHealth(_request, ctx) {
      ctx.body = { status: 'ok' };
    },
    async getReadiness(_request, ctx) {
      try {
        await deps.pingDatabase();
        ctx.body = { status: 'ok', checks: { database: 'ok' } };
      } catch {
        ctx.status = 503;
        ctx.body = { status: 'unavailable', checks: { database: 'failed' } };
      }
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
  };
}

// Request id, structured access log, metrics and a per-request time limit.
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import { PROBE_OPERATIONS } from './management.ts';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** A request's logger (with its request id), made when something first logs. */
export class RequestLog {
  private made: Logger | undefined;
  private readonly logger: Logger;
  private readonly requestId: string;

  constructor(logger: Logger, requestId: string) {
    this.logger = logger;
    this.requestId = requestId;
  }

  get child(): Logger {
    this.made ??= this.logger.child({ requestId: this.requestId });
    return this.made;
  }

  error(object: object, message: string): void {
    this.child.error(object, message);
  }
}

export function requestContext(logger: Logger, metrics: Metrics) {
  return async function trackRequest(ctx: Context, next: Next): Promise<void> {
    const incoming = ctx.get('x-request-id');
    const requestId = SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    // The query string can carry a WebSocket ticket or an OAuth code: log the path only.
    // The request's child logger is made on first use: most requests log nothing at `warn`.
    const log = new RequestLog(logger, requestId);
    ctx.state.log = log;
    const started = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const operation: string = ctx.state.operationId ?? (ctx.status === 404 ? 'unmatched' : 'other');
      metrics.httpRequests.observe(ctx.method, operation, ctx.status, seconds);
      // Probes and scrapes that succeed are logged at debug (32.6: every orchestrator probe was a line).
      const level = PROBE_OPERATIONS.has(operation) && ctx.status < 400 ? 'debug' : 'info';
      if (logger.isLevelEnabled(level))
        log.child[level](
          {
            method: ctx.method,
            path: ctx.path,
            status: ctx.status,
            operation,
            ms: Math.round(seconds * 1e4) / 10,
          },
          'request',
        );
    }
  };
}

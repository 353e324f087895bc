// The management listener (MANAGEMENT_PORT, issue 32.6): liveness, readiness and metrics on their own
// address and port, as Keycloak's management interface does, so orchestrator probes and Prometheus
// scrapes reach the instance without the public port serving them. Both listeners run the same
// Koa app; a request that arrived on the management listener is marked, and `listenerScope` keeps
// each listener to its own paths once a management port is configured. Unconfigured, the public
// port serves everything, as before.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';
import { NotFoundError } from '../domain/errors.ts';

/** What the management listener serves (the contract's operations getHealth, getReadiness, getMetrics). */
export const MANAGEMENT_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** The operations probes and scrapes call: logged at debug, not info, when they succeed. */
export const PROBE_OPERATIONS: ReadonlySet<string> = new Set(['getHealth', 'getReadiness', 'getMetrics']);

const arrivedOnManagement = new WeakSet<IncomingMessage>();

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** The management listener's request handler: `handle` (the app's), its requests marked as such. */
export function managementHandler(handle: Handler): Handler {
  return (request, response) => {
    arrivedOnManagement.add(request);
    handle(request, response);
  };
}

function routeNotFound(ctx: Context, where: string): never {
  throw new NotFoundError(`No route for ${ctx.method} ${ctx.path} ${where}.`, '/problems/route-not-found');
}

/**
 * With a management listener configured: its paths answer 404 on the public port, and everything
 * else answers 404 on the management port. Without one: nothing to do.
 */
export function listenerScope(managementConfigured: boolean) {
  return async function scopeToListener(ctx: Context, next: Next): Promise<void> {
    if (managementConfigured) {
      const management = MANAGEMENT_PATHS.has(ctx.path);
      if (arrivedOnManagement.has(ctx.req)) {
        if (!management)
          routeNotFound(ctx, 'on the management port (it serves /healthz, /readyz and /metrics)');
      } else if (management) {
        routeNotFound(ctx, 'on this port: it is served on the management port (MANAGEMENT_PORT)');
      }
    }
    await next();
  };
}

import type { Context } from 'koa';
import type { AuthContext } from '../auth/caller.ts';

/** A request after routing and contract validation (query and path values already coerced). */
export interface OperationRequest {
  operationId: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  /** Present on every protected operation. */
  auth: AuthContext | null;
}

/** Handlers are thin: parse, authorize, call a domain service, shape the response on `ctx`. */
export type OperationHandler = (request: OperationRequest, ctx: Context) => Promise<void> | void;

export type HandlerMap = Record<string, OperationHandler>;

/** The authenticated caller of a protected operation. */
export function caller(request: OperationRequest): AuthContext {
  if (!request.auth) throw new Error(`operation ${request.operationId} reached its handler unauthenticated`);
  return request.auth;
}

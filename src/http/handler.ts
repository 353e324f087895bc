import type { Context } from 'koa';
import type { operations } from '../../generated/openapi/types.ts';
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

/** Every operationId of the contract (from the types `npm run gen` generates). */
export type OperationId = keyof operations;

/** The JSON media types of a `content` map: `application/json` and `application/<x>+json`. */
type JsonMediaType<Content> = Extract<keyof Content, 'application/json' | `application/${string}+json`>;

type JsonOf<Body> = Body extends { content: infer Content }
  ? [JsonMediaType<Content>] extends [never]
    ? undefined
    : Content[JsonMediaType<Content>]
  : undefined;

/** The JSON request body operation `Id` declares (undefined for one without a body). */
export type RequestBody<Id extends OperationId> = operations[Id] extends { requestBody: infer Body }
  ? JsonOf<Body>
  : operations[Id] extends { requestBody?: infer Body }
    ? JsonOf<NonNullable<Body>> | undefined
    : undefined;

type Declared<Parameters> = [Parameters] extends [undefined]
  ? Record<string, never>
  : NonNullable<Parameters>;

/** A request of operation `Id`: its path values (as sent), its query (coerced) and its body. */
export interface TypedRequest<Id extends OperationId>
  extends Omit<OperationRequest, 'operationId' | 'params' | 'query' | 'body'> {
  operationId: Id;
  params: Declared<operations[Id]['parameters']['path']>;
  query: Declared<operations[Id]['parameters']['query']>;
  body: RequestBody<Id>;
}

/** The JSON body operation `Id` answers with `Status`. */
export type ResponseBody<Id extends OperationId, Status extends keyof operations[Id]['responses']> = JsonOf<
  operations[Id]['responses'][Status]
>;

/**
 * The JSON body operation `Id` answers with `Status`, `never` when it declares no such answer (for
 * helpers generic in the operation, where `ResponseBody`'s constraint cannot be checked).
 */
export type AnswerBody<
  Id extends OperationId,
  Status extends number,
> = Status extends keyof operations[Id]['responses'] ? JsonOf<operations[Id]['responses'][Status]> : never;

export type TypedHandlers<Ids extends OperationId> = {
  [Id in Ids]: (request: TypedRequest<Id>, ctx: Context) => Promise<void> | void;
};

/**
 * Handlers typed per operation from the contract. The router validated every request against the
 * same contract before a handler runs (body, path and query, coerced), which is what makes the
 * typed view sound: this is the one place the untyped request becomes a typed one.
 */
export function typedHandlers<Ids extends OperationId>(handlers: TypedHandlers<Ids>): HandlerMap {
  return handlers as unknown as HandlerMap;
}

/** Sets the status and a body the contract declares for it. */
export function respond<Id extends OperationId, Status extends keyof operations[Id]['responses'] & number>(
  ctx: Context,
  _operation: Id,
  status: Status,
  body: ResponseBody<Id, Status>,
): void {
  ctx.status = status;
  ctx.body = body;
}

// The contract at the edge: routing and request validation from the bundled contract, then the guard
// (credentials, scopes, roles), then the operation's handler. Everything that fails becomes a problem.
// A request goes through named steps: route, authenticate, parse, validate, invoke.

import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseCookies } from 'cookie';
import type { Context } from 'koa';
import { OpenAPIRouter, OpenAPIValidator, type Operation, type Request } from 'openapi-backend';
import type { AuthContext, Authenticator } from '../auth/caller.ts';
import { isServiceAccountId } from '../auth/service-account-ids.ts';
import { dereferenceLocal } from '../contract/dereference.ts';
import type { ContractOperation, OperationGuard, OperationIndex } from '../contract/operations.ts';
import { type AuditOrigin, SERVICE_ORIGIN, withAuditOrigin } from '../domain/audit.ts';
import { AppError, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { HandlerMap, OperationHandler, OperationRequest } from './handler.ts';
import { OperationMatcher } from './operation-matcher.ts';
import { parseQuery } from './query-string.ts';
import {
  type AjvErrorLike,
  findUnstorableString,
  storableDateTimes,
  toFieldErrors,
} from './request-checks.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** openapi-backend's router and request validators of the dereferenced contract. */
interface CompiledContract {
  router: OpenAPIRouter;
  validator: OpenAPIValidator;
}

export interface ContractRouter {
  middleware: (ctx: Context) => Promise<void>;
  guards: Map<string, OperationGuard>;
  /** operationIds that have a handler. */
  implemented: Set<string>;
}

/** What a request is checked and parsed with, per operation, prepared once. */
interface PreparedOperation {
  operation: Operation;
  guard: OperationGuard;
  handler: OperationHandler | undefined;
  /** Alternatives of schemes, each all required (the contract's `security`). */
  security: string[][];
  /**
   * openapi-backend's Ajv validators: request body, then parameters (coercing). Compiled at the
   * operation's first request, then kept (in openapi-backend's validator, shared by every app of the
   * process): compiling all of them was ~1.5 s, most of the service's start-up.
   */
  validators: () => ValidateFunction[];
  /** Query parameters declared as arrays: a single value becomes a one-item array. */
  arrayQuery: Set<string>;
  /** Query parameters that need openapi-backend's style handling (JSON content, explode: false). */
  styledQuery: boolean;
  /** Whether the operation declares cookie parameters (else cookies are not parsed). */
  cookies: boolean;
  /** Whether the only request media type is JSON (a string body must then parse). */
  jsonOnly: boolean;
}

interface ParsedRequest {
  raw: unknown;
  body: unknown;
  query: Record<string, unknown>;
  params: Record<string, string>;
  cookies: Record<string, string | undefined>;
}

export async function createContractRouter(
  index: OperationIndex,
  handlers: HandlerMap,
  authenticator: Authenticator,
): Promise<ContractRouter> {
  for (const operationId of Object.keys(handlers)) {
    if (!index.byId.has(operationId))
      throw new Error(`handler registered for unknown operation ${operationId}`);
  }
  const api = await compileValidators(index.document);
  // openapi-backend builds new operation objects on every call: one list for the matcher and the map.
  const operations = api.router.getOperations();
  const matcher = new OperationMatcher(operations);
  const prepared = prepareOperations(api, operations, index, handlers);

  /** The operation of the request's method and path: 404 without one, 405 with the path's methods. */
  function route(ctx: Context) {
    const match = matcher.match(ctx.method.toLowerCase(), api.router.normalizePath(ctx.path));
    if (match.kind === 'notFound') {
      throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}.`, '/problems/route-not-found');
    }
    if (match.kind === 'methodNotAllowed') {
      throw new AppError(405, '/problems/method-not-allowed', {
        detail: `${ctx.method} is not allowed on ${ctx.path}; allowed: ${match.allowed.join(', ')}.`,
        headers: { Allow: match.allowed.join(', ') },
      });
    }
    return { operation: prepared.get(match.operation) as PreparedOperation, params: match.params };
  }

  /** The request as openapi-backend's parseRequest would give it for this operation. */
  function parse(ctx: Context, operation: PreparedOperation, params: Record<string, string>): ParsedRequest {
    const raw = ctx.request.body as unknown;
    let body = raw;
    if (raw && typeof raw !== 'object') {
      try {
        body = JSON.parse(String(raw));
      } catch {
        // reported by validate() when the operation takes JSON only
      }
    }
    let query: Record<string, unknown>;
    if (operation.styledQuery) {
      const request: Request = {
        method: ctx.method,
        path: ctx.path,
        query: ctx.querystring,
        headers: ctx.headers as Request['headers'],
      };
      query = api.router.parseRequest(request, operation.operation).query as Record<string, unknown>;
    } else {
      query = ctx.querystring === '' ? {} : parseQuery(ctx.querystring);
    }
    for (const name of operation.arrayQuery) {
      if (typeof query[name] === 'string') query[name] = [query[name]];
    }
    const cookies = operation.cookies ? parseCookies(ctx.get('cookie')) : {};
    return { raw, body, query, params, cookies };
  }

  async function dispatch(ctx: Context): Promise<void> {
    const { operation, params } = route(ctx);
    const { guard } = operation;
    ctx.state.operationId = guard.operationId;
    await authenticate(ctx, operation, authenticator);
    const parsed = parse(ctx, operation, params);
    validate(ctx, operation, parsed);
    if (!operation.handler) {
      throw new AppError(501, '/problems/not-implemented', {
        detail: `Operation ${guard.operationId} is in the contract but not served by this version.`,
      });
    }
    const request: OperationRequest = {
      operationId: guard.operationId,
      params: parsed.params,
      query: parsed.query,
      body: parsed.body,
      headers: ctx.headers as Record<string, string | string[] | undefined>,
      auth: ctx.state.auth ?? null,
    };
    // Every audit entry the operation records names this caller, credential, address and request.
    const origin = requestOrigin(request.auth, {
      address: ctx.ip || null,
      requestId: ctx.state.requestId ?? null,
    });
    await withAuditOrigin(origin, () => operation.handler?.(request, ctx));
  }

  return {
    guards: new Map(index.operations.map((operation) => [operation.operationId, operation.guard])),
    implemented: new Set(Object.keys(handlers)),
    middleware: async (ctx: Context) => {
      try {
        await dispatch(ctx);
      } catch (error) {
        // Path parameters are percent-decoded: a malformed encoding (`%`, `%zz`, invalid UTF-8) is
        // the client's mistake, not a server error.
        if (error instanceof URIError) {
          throw new ValidationError('The request path is not valid percent-encoded UTF-8.', [
            { pointer: '/path', detail: 'has a malformed percent-encoding' },
          ]);
        }
        throw error;
      }
    },
  };
}

/**
 * openapi-backend's router and validator on the dereferenced document, compiling each request validator once (Ajv 2020
 * with formats, all errors, coercion of path and query parameters only: they arrive as strings;
 * bodies are validated as sent). Requests are then routed, parsed and checked here, with the same
 * outcomes as its handleRequest, minus the work it repeats per request.
 */
function compileValidators(document: Record<string, unknown>): Promise<CompiledContract> {
  // Once per document and process: the validators are pure functions of the contract, and a process
  // that builds several apps (the test suite, a benchmark's two instances) would otherwise compile
  // them again for each (~1 s of start-up).
  let compiled = compiledValidators.get(document);
  if (!compiled) {
    compiled = compile(document);
    compiledValidators.set(document, compiled);
    compiled.catch(() => compiledValidators.delete(document));
  }
  return compiled;
}
const compiledValidators = new WeakMap<Record<string, unknown>, Promise<CompiledContract>>();

async function compile(document: Record<string, unknown>): Promise<CompiledContract> {
  // openapi-backend's OpenAPIBackend is not used: its init checks the document against the 3.0
  // meta-schema (ours is 3.1, linted by Redocly) and dereferences it with json-schema-ref-parser
  // (~0.5 CPU-s; the bundle's references are all local: ../contract/dereference.ts does the same in
  // one pass, keeping the keywords beside a `$ref`, as OpenAPI 3.1 allows: e.g.
  // CreateCollectionRequest's `not`). Its router and validator are made here, the validator with
  // lazy compilation: an operation's request validators are compiled at its first request, while
  // the response validators, which openapi-backend compiles at init for every operation and which
  // the service never uses (the tests check answers against the contract themselves), are never
  // built. That was half of the service's start-up time. (openapi-backend's `quick` option also
  // compiles lazily, but dereferences with a library that drops the keywords beside a `$ref`.)
  const definition = dereferenceLocal(structuredClone(document)) as never;
  const router = new OpenAPIRouter({ definition, apiRoot: '/' });
  const validator = new OpenAPIValidator({
    definition,
    router,
    lazyCompileValidators: true,
    coerceTypes: true,
    customizeAjv: (_ajv, options) =>
      storableDateTimes(
        addFormats(new Ajv2020({ ...options, allErrors: true, strict: false, validateSchema: false })),
      ) as never,
  });
  return { router, validator };
}

/** Per operation of openapi-backend's router: its guard and handler, validators and parsing needs. */
function prepareOperations(
  api: CompiledContract,
  operations: Operation[],
  index: OperationIndex,
  handlers: HandlerMap,
): Map<Operation, PreparedOperation> {
  const prepared = new Map<Operation, PreparedOperation>();
  for (const operation of operations) {
    const operationId = operation.operationId as string;
    const indexed = index.byId.get(operationId) as ContractOperation;
    const query = indexed.parameters.filter((parameter) => parameter.in === 'query');
    const mediaTypes = Object.keys(indexed.body?.content ?? {});
    prepared.set(operation, {
      operation,
      guard: indexed.guard,
      handler: handlers[operationId],
      security: indexed.security.map((requirement) => Object.keys(requirement)),
      validators: () => api.validator.getRequestValidatorsForOperation(operationId) ?? [],
      arrayQuery: new Set(
        query
          .filter(
            (parameter) =>
              (index.resolve(parameter.schema) as { type?: unknown } | undefined)?.type === 'array',
          )
          .map((parameter) => parameter.name),
      ),
      styledQuery: query.some(
        (parameter) => parameter.content?.['application/json'] !== undefined || parameter.explode === false,
      ),
      cookies: indexed.parameters.some((parameter) => parameter.in === 'cookie'),
      jsonOnly: mediaTypes.length === 1 && mediaTypes[0] === 'application/json',
    });
  }
  return prepared;
}

/** Credentials, scopes and roles (the authenticator); then the body's media type; then the schemes. */
async function authenticate(ctx: Context, operation: PreparedOperation, authenticator: Authenticator) {
  const { guard } = operation;
  if (!guard.public) ctx.state.auth = await authenticator.authenticate(ctx, guard);
  if (guard.bodyTypes.length > 0 && hasBody(ctx) && !guard.bodyTypes.some((type) => ctx.request.is(type))) {
    throw new AppError(415, '/problems/unsupported-media-type', {
      detail: `The request body must be ${guard.bodyTypes.join(' or ')}.`,
    });
  }
  if (
    operation.security.length > 0 &&
    !operation.security.some((schemes) => schemes.every((scheme) => satisfied(ctx, scheme)))
  ) {
    throw new AppError(401, '/problems/unauthorized', {
      detail: 'Credentials are required.',
    });
  }
}

/**
 * Parameters and body against the contract (query and path values coerced to their types; the
 * coerced query replaces the parsed one); then strings no database can store. Throws a 400 naming
 * every invalid field.
 */
function validate(ctx: Context, operation: PreparedOperation, parsed: ParsedRequest): void {
  const errors: AjvErrorLike[] = [];
  if (typeof parsed.raw !== 'object' && parsed.raw !== undefined && operation.jsonOnly) {
    try {
      JSON.parse(String(parsed.raw));
    } catch (error) {
      errors.push({ keyword: 'parse', instancePath: '', params: {}, message: (error as Error).message });
    }
  }
  const parameters: Record<string, unknown> = {
    // A copy: the validators coerce in place, and handlers get path values as sent.
    path: { ...parsed.params },
    query: parsed.query,
    header: ctx.headers,
    cookie: parsed.cookies,
  };
  const contentType = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
  if (typeof parsed.body === 'object' || contentType === 'application/json')
    parameters.requestBody = parsed.body;
  for (const validator of operation.validators()) {
    validator(parameters);
    if (validator.errors) errors.push(...(validator.errors as AjvErrorLike[]));
  }
  parsed.query = parameters.query as Record<string, unknown>;
  if (errors.length > 0) {
    const fields = toFieldErrors(errors);
    throw new ValidationError(
      `The request has ${fields.length} invalid field${fields.length === 1 ? '' : 's'}.`,
      fields,
    );
  }
  const unstorable = findUnstorableString(parsed.body, '/body');
  if (unstorable !== undefined)
    throw new ValidationError('The request body has 1 invalid field.', [unstorable]);
}

/** Whether the authenticated caller satisfies one security scheme of the contract. */
function satisfied(ctx: Context, scheme: string): boolean {
  if (scheme === 'oauth2') return Boolean(ctx.state.auth);
  if (scheme === 'apiKey') return Boolean(ctx.state.auth?.apiKeyId);
  return false;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
}

/** Who an audit entry of this request names: the caller, its credential, its address, the request id. */
function requestOrigin(
  auth: AuthContext | null,
  request: { address: string | null; requestId: string | null },
): AuditOrigin {
  if (!auth) return { ...SERVICE_ORIGIN, actor: { kind: 'user', id: null, role: null }, ...request };
  return {
    actor: {
      kind: isServiceAccountId(auth.userId) ? 'serviceAccount' : 'user',
      id: auth.userId,
      role: auth.role,
    },
    credential: auth.apiKeyId
      ? { kind: 'apiKey', clientId: auth.clientId, apiKeyId: auth.apiKeyId }
      : { kind: 'token', clientId: auth.clientId },
    ...request,
  };
}

// The contract at the edge: routing and request validation from the bundled contract, then the guard
// (credentials, scopes, roles), then the operation's handler. Everything that fails becomes a problem.

import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseCookies } from 'cookie';
import type { Context } from 'koa';
import { OpenAPIBackend, type Operation, type Request } from 'openapi-backend';
import type { Authenticator } from '../auth/caller.ts';
import { type OperationGuard, operationGuards } from '../contract/operations.ts';
import { AppError, type FieldError, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { HandlerMap, OperationHandler, OperationRequest } from './handler.ts';
import { OperationMatcher } from './operation-matcher.ts';
import { parseQuery } from './query-string.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** openapi-backend checks documents against the 3.0 meta-schema; ours is 3.1 and linted by Redocly. */
class OpenApi31Backend extends OpenAPIBackend {
  override validateDefinition() {
    return this.definition;
  }
}

interface AjvErrorLike {
  instancePath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}

function toFieldErrors(errors: AjvErrorLike[]): FieldError[] {
  const seen = new Set<string>();
  const result: FieldError[] = [];
  for (const error of errors) {
    // oneOf/anyOf/if wrappers repeat what their branches already said.
    if (['oneOf', 'anyOf', 'if'].includes(error.keyword) && errors.length > 1) continue;
    let pointer = error.instancePath || '/';
    if (error.keyword === 'required')
      pointer = `${error.instancePath}/${String(error.params.missingProperty)}`;
    if (error.keyword === 'additionalProperties')
      pointer = `${error.instancePath}/${String(error.params.additionalProperty)}`;
    pointer = pointer.replace(/^\/requestBody/, '/body');
    let detail = error.message ?? 'is invalid';
    if (error.keyword === 'additionalProperties') detail = 'is not an allowed property';
    if (error.keyword === 'required') detail = 'is required';
    const key = `${pointer} ${detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    result.push({ pointer, detail });
  }
  return result;
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
  /** openapi-backend's compiled Ajv validators: request body, then parameters (coercing). */
  validators: ValidateFunction[];
  /** Query parameters declared as arrays: a single value becomes a one-item array. */
  arrayQuery: Set<string>;
  /** Query parameters that need openapi-backend's style handling (JSON content, explode: false). */
  styledQuery: boolean;
  /** Whether the operation declares cookie parameters (else cookies are not parsed). */
  cookies: boolean;
  /** Whether the only request media type is JSON (a string body must then parse). */
  jsonOnly: boolean;
}

interface ParameterLike {
  name: string;
  in: string;
  schema?: { type?: unknown };
  content?: Record<string, unknown>;
  explode?: boolean;
}

export async function createContractRouter(
  document: Record<string, unknown>,
  handlers: HandlerMap,
  authenticator: Authenticator,
): Promise<ContractRouter> {
  const guards = operationGuards(document);
  for (const operationId of Object.keys(handlers)) {
    if (!guards.has(operationId)) throw new Error(`handler registered for unknown operation ${operationId}`);
  }

  // openapi-backend dereferences the document and compiles every request validator once (Ajv 2020
  // with formats, all errors, coercion of path and query parameters only: they arrive as strings;
  // bodies are validated as sent). Requests are then routed, parsed and checked here, with the same
  // outcomes as its handleRequest, minus the work it repeats per request.
  const api = new OpenApi31Backend({
    definition: structuredClone(document) as never,
    strict: true,
    validate: true,
    coerceTypes: true,
    customizeAjv: (_ajv, options) =>
      storableDateTimes(
        addFormats(
          new Ajv2020({
            ...options,
            allErrors: true,
            strict: false,
            validateSchema: false,
          }),
        ),
      ) as never,
  });
  await api.init();
  if (api.router.apiRoot !== '/') throw new Error('the contract router supports only the API root /');

  const operations = api.router.getOperations();
  const matcher = new OperationMatcher(operations);
  const prepared = new Map<Operation, PreparedOperation>();
  for (const operation of operations) {
    const operationId = operation.operationId as string;
    const parameters = (operation.parameters ?? []) as ParameterLike[];
    const query = parameters.filter((parameter) => parameter.in === 'query');
    const mediaTypes = Object.keys(
      ((operation.requestBody as { content?: Record<string, unknown> } | undefined)?.content ?? {}) as object,
    );
    prepared.set(operation, {
      operation,
      guard: guards.get(operationId) as OperationGuard,
      handler: handlers[operationId],
      security: (operation.security ?? []).map((requirement) => Object.keys(requirement)),
      validators: api.validator.getRequestValidatorsForOperation(operationId) ?? [],
      arrayQuery: new Set(query.filter((parameter) => parameter.schema?.type === 'array').map((p) => p.name)),
      styledQuery: query.some(
        (parameter) => parameter.content?.['application/json'] !== undefined || parameter.explode === false,
      ),
      cookies: parameters.some((parameter) => parameter.in === 'cookie'),
      jsonOnly: mediaTypes.length === 1 && mediaTypes[0] === 'application/json',
    });
  }

  async function dispatch(ctx: Context): Promise<void> {
    const method = ctx.method.toLowerCase();
    const path = api.router.normalizePath(ctx.path);
    const match = matcher.match(method, path);
    if (match.kind === 'notFound') {
      throw new NotFoundError(
        `No route for ${ctx.method} ${ctx.path}.`,
        '/problems/route-not-found',
        'Route not found',
      );
    }
    if (match.kind === 'methodNotAllowed') {
      throw new AppError(405, '/problems/method-not-allowed', 'Method not allowed', {
        detail: `${ctx.method} is not allowed on ${ctx.path}; allowed: ${match.allowed.join(', ')}.`,
        headers: { Allow: match.allowed.join(', ') },
      });
    }
    const operation = prepared.get(match.operation) as PreparedOperation;
    const { guard } = operation;
    ctx.state.operationId = guard.operationId;

    // Credentials, scopes and roles; then the media type of a body.
    if (!guard.public) ctx.state.auth = await authenticator.authenticate(ctx, guard);
    if (guard.bodyTypes.length > 0 && hasBody(ctx) && !guard.bodyTypes.some((type) => ctx.request.is(type))) {
      throw new AppError(415, '/problems/unsupported-media-type', 'Unsupported media type', {
        detail: `The request body must be ${guard.bodyTypes.join(' or ')}.`,
      });
    }
    if (
      operation.security.length > 0 &&
      !operation.security.some((schemes) => schemes.every((scheme) => satisfied(ctx, scheme)))
    ) {
      throw new AppError(401, '/problems/unauthorized', 'Authentication required', {
        detail: 'Credentials are required.',
      });
    }

    // Parameters and body against the contract (query and path values coerced to their types).
    const parsed = parseParameters(ctx, operation, match.params);
    const errors = validate(ctx, operation, parsed);
    if (errors.length > 0) {
      const fields = toFieldErrors(errors);
      throw new ValidationError(
        `The request has ${fields.length} invalid field${fields.length === 1 ? '' : 's'}.`,
        fields,
      );
    }
    if (!operation.handler) {
      throw new AppError(501, '/problems/not-implemented', 'Not implemented', {
        detail: `Operation ${guard.operationId} is in the contract but not served by this version.`,
      });
    }
    const request: OperationRequest = {
      operationId: guard.operationId,
      params: match.params,
      query: parsed.query,
      body: parsed.body,
      headers: ctx.headers as Record<string, string | string[] | undefined>,
      auth: ctx.state.auth ?? null,
    };
    const unstorable = findUnstorableString(request.body, '/body');
    if (unstorable !== undefined) {
      throw new ValidationError('The request body has 1 invalid field.', [unstorable]);
    }
    await operation.handler(request, ctx);
  }

  /** The request as openapi-backend's parseRequest would give it for this operation. */
  function parseParameters(ctx: Context, operation: PreparedOperation, params: Record<string, string>) {
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
      query = api.router.parseRequest(
        {
          method: ctx.method,
          path: ctx.path,
          query: ctx.querystring,
          headers: ctx.headers as Request['headers'],
        },
        operation.operation,
      ).query as Record<string, unknown>;
    } else {
      query = ctx.querystring === '' ? {} : parseQuery(ctx.querystring);
    }
    for (const name of operation.arrayQuery) {
      if (typeof query[name] === 'string') query[name] = [query[name]];
    }
    const cookies = operation.cookies ? parseCookies(ctx.get('Cookie')) : {};
    return { raw, body, query, params, cookies };
  }

  /** Runs the operation's validators; coerced query values replace the parsed ones. */
  function validate(
    ctx: Context,
    operation: PreparedOperation,
    parsed: ReturnType<typeof parseParameters>,
  ): AjvErrorLike[] {
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
    const contentType = (ctx.get('Content-Type').split(';')[0] ?? '').trim().toLowerCase();
    if (typeof parsed.body === 'object' || contentType === 'application/json')
      parameters.requestBody = parsed.body;
    for (const validator of operation.validators) {
      validator(parameters);
      if (validator.errors) errors.push(...(validator.errors as AjvErrorLike[]));
    }
    parsed.query = parameters.query as Record<string, unknown>;
    return errors;
  }

  return {
    guards,
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

/** Whether the authenticated caller satisfies one security scheme of the contract. */
function satisfied(ctx: Context, scheme: string): boolean {
  if (scheme === 'oauth2') return Boolean(ctx.state.auth);
  if (scheme === 'apiKey') return Boolean(ctx.state.auth?.apiKeyId);
  return false;
}

/**
 * RFC 3339 date-times JavaScript cannot hold are refused by the format itself (13.9): a leap second
 * (`23:59:60`) passes ajv-formats' check but is an Invalid Date, which handlers then failed on with a
 * 500. One check here covers every date-time of every operation.
 */
function storableDateTimes(ajv: Ajv2020): Ajv2020 {
  const rfc3339 = ajv.formats['date-time'] as { validate: (value: string) => boolean } | undefined;
  if (!rfc3339?.validate) throw new Error('ajv-formats did not register date-time');
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (value: string) => rfc3339.validate(value) && !Number.isNaN(Date.parse(value)),
  });
  return ajv;
}

/** Why a string cannot be stored, for the problem's `errors`. */
function unstorable(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!value.isWellFormed()) return 'must not contain a lone UTF-16 surrogate (U+D800 to U+DFFF)';
  return undefined;
}

/**
 * The first string (value or key) no database can hold, as a field error. PostgreSQL text cannot
 * store U+0000 and SQLite ends a statement at it; a lone surrogate is not Unicode text: PostgreSQL
 * refuses it (a 500 before 13.9) and SQLite stored it, to be sent on as invalid JSON in events. So no
 * field accepts either (the contract's 400 says so).
 */
function findUnstorableString(body: unknown, root: string): FieldError | undefined {
  // Iterative: a body may nest deeper than the call stack (free-form JSON-LD is allowed).
  const pending: [unknown, string][] = [[body, root]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, pointer] = next;
    if (typeof value === 'string') {
      const detail = unstorable(value);
      if (detail) return { pointer, detail };
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const at = `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        const detail = unstorable(key);
        if (detail) return { pointer: at, detail };
        pending.push([item, at]);
      }
    }
  }
  return undefined;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('Content-Length') || 0) > 0 || ctx.get('Transfer-Encoding') !== '';
}

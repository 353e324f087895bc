// openapi-backend <-> Koa: routing and request validation from the bundled contract, then the guard
// (credentials, scopes, roles), then the operation's handler. Everything that fails becomes a problem.

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Context } from 'koa';
import { type Context as BackendContext, OpenAPIBackend, type Request } from 'openapi-backend';
import { AppError, type FieldError, NotFoundError, ValidationError } from '../domain/errors.ts';
import { type OperationGuard, operationGuards } from './contract.ts';
import type { HandlerMap, OperationRequest } from './handler.ts';
import { precompileRouter } from './operation-matcher.ts';
import type { Authenticator } from './security.ts';

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

export async function createContractRouter(
  document: Record<string, unknown>,
  handlers: HandlerMap,
  authenticator: Authenticator,
): Promise<ContractRouter> {
  const guards = operationGuards(document);
  for (const operationId of Object.keys(handlers)) {
    if (!guards.has(operationId)) throw new Error(`handler registered for unknown operation ${operationId}`);
  }

  const api = new OpenApi31Backend({
    definition: structuredClone(document) as never,
    strict: true,
    validate: true,
    coerceTypes: true,
    customizeAjv: (_ajv, options) =>
      addFormats(
        new Ajv2020({
          ...options,
          allErrors: true,
          strict: false,
          // openapi-backend asks for coercion of path and query parameters only (they arrive as
          // strings); request bodies are validated as sent.
          validateSchema: false,
        }),
      ) as never,
    handlers: {
      notFound: (_c: BackendContext, ctx: Context) => {
        throw new NotFoundError(
          `No route for ${ctx.method} ${ctx.path}.`,
          '/problems/route-not-found',
          'Route not found',
        );
      },
      methodNotAllowed: (c: BackendContext, ctx: Context) => {
        const allowed = allowedMethods(api, c.request.path);
        throw new AppError(405, '/problems/method-not-allowed', 'Method not allowed', {
          detail: `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allowed.join(', ')}.`,
          headers: { Allow: allowed.join(', ') },
        });
      },
      postRoutingHandler: async (c: BackendContext, ctx: Context) => {
        if (!c.operation) return;
        const guard = guards.get(c.operation.operationId as string) as OperationGuard;
        ctx.state.operationId = guard.operationId;
        if (!guard.public) ctx.state.auth = await authenticator.authenticate(ctx, guard);
        if (
          guard.bodyTypes.length > 0 &&
          hasBody(ctx) &&
          !guard.bodyTypes.some((type) => ctx.request.is(type))
        ) {
          throw new AppError(415, '/problems/unsupported-media-type', 'Unsupported media type', {
            detail: `The request body must be ${guard.bodyTypes.join(' or ')}.`,
          });
        }
      },
      validationFail: (c: BackendContext) => {
        const errors = toFieldErrors((c.validation.errors ?? []) as AjvErrorLike[]);
        throw new ValidationError(
          `The request has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}.`,
          errors,
        );
      },
      notImplemented: (c: BackendContext) => {
        throw new AppError(501, '/problems/not-implemented', 'Not implemented', {
          detail: `Operation ${c.operation?.operationId} is in the contract but not served by this version.`,
        });
      },
    },
    // The guard above already authenticated; these only tell openapi-backend the outcome.
    securityHandlers: {
      oauth2: (_c: BackendContext, ctx: Context) => Boolean(ctx.state.auth),
      apiKey: (_c: BackendContext, ctx: Context) => Boolean(ctx.state.auth?.apiKeyId),
    },
  });
  api.register('unauthorizedHandler', () => {
    throw new AppError(401, '/problems/unauthorized', 'Authentication required', {
      detail: 'Credentials are required.',
    });
  });
  for (const [operationId, handler] of Object.entries(handlers)) {
    api.register(operationId, (c: BackendContext, ctx: Context) => {
      const request: OperationRequest = {
        operationId,
        params: c.request.params as Record<string, string>,
        query: c.request.query as Record<string, unknown>,
        body: c.request.requestBody,
        headers: c.request.headers as Record<string, string | string[] | undefined>,
        auth: ctx.state.auth ?? null,
      };
      const nul = findNul(request.body, '/body');
      if (nul !== undefined) {
        throw new ValidationError('The request body has 1 invalid field.', [
          { pointer: nul, detail: 'must not contain the NUL character (U+0000)' },
        ]);
      }
      return handler(request, ctx);
    });
  }
  await api.init();
  precompileRouter(api.router);

  return {
    guards,
    implemented: new Set(Object.keys(handlers)),
    middleware: async (ctx: Context) => {
      const request: Request = {
        method: ctx.method,
        path: ctx.path,
        query: ctx.querystring,
        headers: ctx.headers as Request['headers'],
        body: ctx.request.body,
      };
      try {
        await api.handleRequest(request, ctx);
      } catch (error) {
        // The router decodes path parameters: a malformed percent-encoding (`%`, `%zz`, invalid
        // UTF-8) is the client's mistake, not a server error.
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
 * Where a string (value or key) holds U+0000, as a JSON pointer. PostgreSQL text cannot store it
 * and SQLite ends a statement at it, so no field accepts one (the contract's 400 says so).
 */
function findNul(body: unknown, root: string): string | undefined {
  // Iterative: a body may nest deeper than the call stack (free-form JSON-LD is allowed).
  const pending: [unknown, string][] = [[body, root]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, pointer] = next;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return pointer;
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const at = `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        if (key.includes('\u0000')) return at;
        pending.push([item, at]);
      }
    }
  }
  return undefined;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('Content-Length') || 0) > 0 || ctx.get('Transfer-Encoding') !== '';
}

function allowedMethods(api: OpenAPIBackend, path: string): string[] {
  const methods = new Set<string>();
  for (const operation of api.router.getOperations()) {
    if (api.router.matchOperation({ method: operation.method, path, headers: {} } as Request)) {
      methods.add(operation.method.toUpperCase());
    }
  }
  return [...methods].sort();
}

// The bundled OpenAPI document (generated/openapi/openapi.json) is the router and validator of record.
// This module loads it and derives, per operation, what the edge must enforce.
import { readFileSync } from 'node:fs';

export const OPENAPI_PATH = new URL('../../generated/openapi/openapi.json', import.meta.url);
export const ASYNCAPI_PATH = new URL('../../generated/asyncapi/asyncapi.json', import.meta.url);

type JsonObject = Record<string, unknown>;

export interface OperationGuard {
  operationId: string;
  /** No credentials needed. */
  public: boolean;
  /** A bearer JWT is required. */
  bearer: boolean;
  /** An X-API-Key is required as well. */
  apiKey: boolean;
  /** Every one of these scopes must be in the token. */
  scopes: string[];
  /** When set, the user's role must be one of these. */
  roles: string[] | null;
  /** `x-rate-limit: account`: also counted against the user's smaller account-management budget. */
  accountRateLimit: boolean;
  /** Content types the request body may have (empty: no body). */
  bodyTypes: string[];
}

export function loadOpenApiDocument(): JsonObject {
  return JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as JsonObject;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Reads `security`, `x-roles` and request body media types of every operation into guards. */
export function operationGuards(document: JsonObject): Map<string, OperationGuard> {
  const guards = new Map<string, OperationGuard>();
  const rootSecurity = (document.security as JsonObject[] | undefined) ?? [];
  const paths = (document.paths ?? {}) as Record<string, JsonObject>;
  const requestBodies = ((document.components as JsonObject | undefined)?.requestBodies ?? {}) as Record<
    string,
    JsonObject
  >;
  for (const pathItem of Object.values(paths)) {
    for (const method of METHODS) {
      const operation = pathItem[method] as JsonObject | undefined;
      if (!operation?.operationId) continue;
      const security = (operation.security as Record<string, string[]>[] | undefined) ?? rootSecurity;
      // Operations here declare at most one requirement object: all of its schemes are required.
      const requirement = (security[0] ?? {}) as Record<string, string[]>;
      let requestBody = operation.requestBody as JsonObject | undefined;
      const ref = requestBody?.$ref as string | undefined;
      if (ref) requestBody = requestBodies[ref.split('/').pop() as string];
      guards.set(operation.operationId as string, {
        operationId: operation.operationId as string,
        public: security.length === 0 || Object.keys(requirement).length === 0,
        bearer: 'oauth2' in requirement,
        apiKey: 'apiKey' in requirement,
        scopes: requirement.oauth2 ?? [],
        roles: (operation['x-roles'] as string[] | undefined) ?? null,
        accountRateLimit: operation['x-rate-limit'] === 'account',
        bodyTypes: Object.keys((requestBody?.content as JsonObject | undefined) ?? {}),
      });
    }
  }
  return guards;
}

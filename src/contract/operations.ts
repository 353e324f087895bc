// The contract's operations, read once: the bundled OpenAPI document (generated/openapi/openapi.json)
// walked into an index that the router (src/http/api.ts), the authenticator (src/auth), the fuzzer
// (test/fuzz) and the tests' contract checks (test/helpers/contract.ts) share.
import { readFileSync } from 'node:fs';

export const OPENAPI_PATH = new URL('../../generated/openapi/openapi.json', import.meta.url);
export const ASYNCAPI_PATH = new URL('../../generated/asyncapi/asyncapi.json', import.meta.url);

type JsonObject = Record<string, unknown>;

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** The roles of `x-roles`; `anonymous` alone marks an operation anyone may call without credentials. */
export const CONTRACT_ROLES = ['anonymous', 'player', 'studio', 'oracle', 'admin'] as const;

/**
 * The relations of `x-relation` the caller must have to the operation's object (issue 30's one
 * table; decided in the domain, src/domain/authorization.ts): `none` (no object, or the shared
 * ledger's reads), `self` (the caller's own account data: listings scoped to it, things it creates
 * and will own), `resource-owner` (the object in the path is the caller's; another's answers 404),
 * `collection-studio` (the studio owning the collection, with the studio role, or an admin),
 * `holder-or-collection-studio` (the holder, or the collection's studio under `holder_or_studio`),
 * `wallet-controller` (the caller controls the wallet the request names), `trade-party` (proposer
 * or controls either wallet of the trade), `trade-counterparty` (controls the trade's `toWallet`).
 */
export const CONTRACT_RELATIONS = [
  'none',
  'self',
  'resource-owner',
  'collection-studio',
  'holder-or-collection-studio',
  'wallet-controller',
  'trade-party',
  'trade-counterparty',
] as const;
export type ContractRelation = (typeof CONTRACT_RELATIONS)[number];

/** What the edge enforces for an operation before its handler runs. */
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
  /** `x-roles`: the caller's role must be one of these (`['anonymous']` for a public operation). */
  roles: string[];
  /** `x-relation`: what the caller must be to the object, checked by the domain. */
  relation: ContractRelation;
  /** `x-rate-limit: account`: also counted against the user's smaller account-management budget. */
  accountRateLimit: boolean;
  /**
   * `x-rate-weight: <property>`: the request counts one rate-limit unit per element of this array
   * property of its body (a batch's legs or items), at least one (30.12).
   */
  rateWeight: string | null;
  /** Content types the request body may have (empty: no body). */
  bodyTypes: string[];
}

export interface ContractParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  /** As written in the bundle (may be a `$ref`); absent for a parameter with `content`. */
  schema?: unknown;
  style?: string;
  explode?: boolean;
  content?: JsonObject;
}

export interface ContractOperation {
  operationId: string;
  /** Lower case. */
  method: HttpMethod;
  /** The path template, e.g. `/assets/{id}`. */
  path: string;
  /** The operation object of the bundle, as is. */
  definition: JsonObject;
  /** Path-level then operation-level parameters, `$ref`s followed. */
  parameters: ContractParameter[];
  /** The request body, `$ref` followed; media types in document order. */
  body: { required: boolean; content: Record<string, JsonObject> } | null;
  /** Alternatives of security requirements (the operation's, else the document's). */
  security: Record<string, string[]>[];
  guard: OperationGuard;
}

export interface OperationIndex {
  document: JsonObject;
  operations: readonly ContractOperation[];
  byId: ReadonlyMap<string, ContractOperation>;
  /** Methods (lower case) the contract declares on a path template. */
  methodsOf(path: string): HttpMethod[];
  /** Follows local `$ref`s (the bundle has no others). */
  resolve(node: unknown): unknown;
}

export function loadOpenApiDocument(): JsonObject {
  return JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as JsonObject;
}

let bundled: OperationIndex | undefined;

/** The index of the bundled document, built on first use. */
export function bundledOperations(): OperationIndex {
  bundled ??= indexOperations(loadOpenApiDocument());
  return bundled;
}

export function indexOperations(document: JsonObject): OperationIndex {
  const resolve = (node: unknown): unknown => {
    let current = node;
    while (current && typeof current === 'object' && typeof (current as JsonObject).$ref === 'string') {
      let target: unknown = document;
      for (const token of ((current as JsonObject).$ref as string).replace(/^#\//, '').split('/')) {
        target = (target as JsonObject)[token.replaceAll('~1', '/').replaceAll('~0', '~')];
      }
      current = target;
    }
    return current;
  };
  const rootSecurity = (document.security as Record<string, string[]>[] | undefined) ?? [];
  const operations: ContractOperation[] = [];
  const methods = new Map<string, HttpMethod[]>();
  for (const [path, rawItem] of Object.entries((document.paths ?? {}) as Record<string, JsonObject>)) {
    const item = resolve(rawItem) as JsonObject;
    const declared: HttpMethod[] = [];
    methods.set(path, declared);
    for (const method of HTTP_METHODS) {
      const definition = item[method] as JsonObject | undefined;
      if (!definition) continue;
      declared.push(method);
      if (typeof definition.operationId !== 'string') continue;
      const parameters = [
        ...((item.parameters as unknown[] | undefined) ?? []),
        ...((definition.parameters as unknown[] | undefined) ?? []),
      ].map((raw) => resolve(raw) as ContractParameter);
      const requestBody = resolve(definition.requestBody) as JsonObject | undefined;
      const body = requestBody
        ? {
            required: requestBody.required === true,
            content: (requestBody.content ?? {}) as Record<string, JsonObject>,
          }
        : null;
      const security = (definition.security as Record<string, string[]>[] | undefined) ?? rootSecurity;
      operations.push({
        operationId: definition.operationId,
        method,
        path,
        definition,
        parameters,
        body,
        security,
        guard: guardOf(definition.operationId, definition, security, body),
      });
    }
  }
  return {
    document,
    operations,
    byId: new Map(operations.map((operation) => [operation.operationId, operation])),
    methodsOf: (path) => methods.get(path) ?? [],
    resolve,
  };
}

/**
 * `x-roles` and `x-relation`, which every operation declares (issue 30: one table of who may do
 * what); a public operation's roles are `[anonymous]`, a protected one's never include it.
 */
function accessOf(operationId: string, definition: JsonObject, isPublic: boolean) {
  const roles = definition['x-roles'];
  const relation = definition['x-relation'] as ContractRelation;
  const fail = (why: string) => {
    throw new Error(`The contract's operation ${operationId} ${why}.`);
  };
  if (!Array.isArray(roles) || roles.length === 0) fail('declares no x-roles');
  const known = roles as string[];
  if (known.some((role) => !(CONTRACT_ROLES as readonly string[]).includes(role)))
    fail(`has an unknown role in x-roles (${known.join(', ')})`);
  if (isPublic !== known.includes('anonymous') || (isPublic && known.length !== 1))
    fail('must have x-roles [anonymous] exactly when it needs no credentials');
  if (!CONTRACT_RELATIONS.includes(relation)) fail(`has no known x-relation (${String(relation)})`);
  return { roles: known, relation };
}

/** Reads `security`, `x-roles`, `x-relation`, `x-rate-limit`, `x-rate-weight` and the request body's media types. */
function guardOf(
  operationId: string,
  definition: JsonObject,
  security: Record<string, string[]>[],
  body: ContractOperation['body'],
): OperationGuard {
  // Operations here declare at most one requirement object: all of its schemes are required.
  const requirement = security[0] ?? {};
  const isPublic = security.length === 0 || Object.keys(requirement).length === 0;
  return {
    operationId,
    public: isPublic,
    bearer: 'oauth2' in requirement,
    apiKey: 'apiKey' in requirement,
    scopes: requirement.oauth2 ?? [],
    ...accessOf(operationId, definition, isPublic),
    accountRateLimit: definition['x-rate-limit'] === 'account',
    rateWeight: typeof definition['x-rate-weight'] === 'string' ? definition['x-rate-weight'] : null,
    bodyTypes: Object.keys(body?.content ?? {}),
  };
}

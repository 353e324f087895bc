// Validates every HTTP response a test receives against the bundled OpenAPI contract: the status must
// be declared for the operation, the media type must match, and the body must satisfy the schema.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { bundledOperations } from '../../src/contract/operations.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
type Json = Record<string, unknown>;

// The service's operation index: the same walk of the bundled document the router uses.
const operationIndex = bundledOperations();
export const openapiDocument = operationIndex.document;

const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateSchema: false }));
ajv.addSchema(openapiDocument, 'openapi');

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  operation: Json;
}

const CHECKED_METHODS = new Set(['get', 'post', 'put', 'delete', 'patch']);
const routes: Route[] = operationIndex.operations
  .filter((operation) => CHECKED_METHODS.has(operation.method))
  .map((operation) => ({
    method: operation.method.toUpperCase(),
    template: operation.path,
    pattern: new RegExp(
      `^${operation.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`,
    ),
    operation: operation.definition,
  }));
// Literal paths win over templated ones (/api/v1/wallets/link vs a {param}).
routes.sort((a, b) => a.template.split('{').length - b.template.split('{').length);

function pointer(...segments: string[]): string {
  return segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

function resolve(node: Json): Json {
  let current = node;
  while (typeof current.$ref === 'string') {
    const path = (current.$ref as string).replace(/^#\//, '').split('/');
    let target: unknown = openapiDocument;
    for (const part of path) target = (target as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    current = target as Json;
  }
  return current;
}

const validators = new Map<string, ValidateFunction>();
function validatorFor(ref: string): ValidateFunction {
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.getSchema(ref) as ValidateFunction;
    if (!validate) throw new Error(`no schema at ${ref}`);
    validators.set(ref, validate);
  }
  return validate;
}

export function findOperation(method: string, path: string): Route | undefined {
  return routes.find((route) => route.method === method && route.pattern.test(path));
}

const problemRef = 'openapi#/components/schemas/Problem';

interface ProblemType {
  type: string;
  title: string;
  status: number;
}
/** The registry of problem types (contracts/problems.yaml, published at the root by `npm run gen`). */
export const problemTypes = new Map(
  ((openapiDocument['x-problem-types'] ?? []) as ProblemType[]).map((p) => [p.type, p]),
);
const asyncapiDocument = JSON.parse(
  readFileSync(new URL('../../generated/asyncapi/asyncapi.json', import.meta.url), 'utf8'),
) as Json;

/**
 * Throws unless a problem the service sent is in the registry with this status and title, and, when
 * `documented` is given, among the types the operation or channel lists. Every response and refused
 * WebSocket handshake of the suite passes through here, so a type the contract does not document
 * for that operation fails the test that met it.
 */
export function assertProblemDocumented(
  where: string,
  status: number,
  body: unknown,
  documented: readonly string[] | undefined,
): void {
  const type = (body as { type?: unknown } | undefined)?.type;
  if (typeof type !== 'string') throw new Error(`${where}: a problem without a type`);
  const registered = problemTypes.get(type);
  if (!registered)
    throw new Error(`${where}: ${type} is not in the problem-type registry (contracts/problems.yaml)`);
  if (registered.status !== status)
    throw new Error(`${where}: ${type} is registered with status ${registered.status}, sent with ${status}`);
  const title = (body as { title?: unknown }).title;
  if (title !== registered.title)
    throw new Error(`${where}: ${type} is registered with title "${registered.title}", sent with "${title}"`);
  if (documented && !documented.includes(type))
    throw new Error(
      `${where}: ${type} is not documented for this operation (x-problem-types: ${documented.join(', ')})`,
    );
}

/** The problem types a channel's refused handshake may carry (its `x-problem-types`). */
export function channelProblemTypes(address: string): string[] | undefined {
  for (const channel of Object.values(asyncapiDocument.channels as Record<string, Json>)) {
    if (channel.address !== address) continue;
    let list = channel['x-problem-types'] as Json | string[];
    while (!Array.isArray(list) && typeof list?.$ref === 'string') {
      let target: unknown = asyncapiDocument;
      for (const part of (list.$ref as string).replace(/^#\//, '').split('/'))
        target = (target as Json)[part];
      list = target as Json | string[];
    }
    return list as string[];
  }
  return undefined;
}

export interface CheckedResponse {
  status: number;
  contentType: string;
  body: unknown;
}

/**
 * Throws an Error describing every way the response departs from the contract.
 * `implemented` lists operationIds that have a handler: a 501 is allowed only for the others.
 */
export function assertMatchesContract(
  method: string,
  path: string,
  response: CheckedResponse & { headers: Headers },
  implemented?: Set<string>,
): void {
  const where = `${method} ${path} -> ${response.status}`;
  if (!response.headers.get('x-request-id')) throw new Error(`${where}: missing X-Request-Id header`);
  const route = findOperation(method, path);
  const mediaType = response.contentType.split(';')[0].trim();
  if (
    !route ||
    (response.status === 501 && implemented && !implemented.has(route.operation.operationId as string))
  ) {
    // Unknown routes (404/405) and not-yet-implemented operations answer with a plain problem.
    if (![404, 405, 501].includes(response.status) && !(route === undefined && response.status < 300)) {
      throw new Error(`${where}: no operation in the contract for this request`);
    }
    if (response.status >= 400) {
      checkBody(where, problemRef, response.body, mediaType, 'application/problem+json');
      assertProblemDocumented(where, response.status, response.body, undefined);
    }
    return;
  }
  const responses = route.operation.responses as Json;
  const key =
    String(response.status) in responses
      ? String(response.status)
      : 'default' in responses
        ? 'default'
        : null;
  if (!key) {
    throw new Error(
      `${where}: status not declared for ${route.operation.operationId} (declared: ${Object.keys(responses).join(', ')}); body: ${JSON.stringify(response.body)}`,
    );
  }
  const declared = resolve(responses[key] as Json);
  const content = declared.content as Json | undefined;
  if (!content) {
    if (response.body !== undefined && response.body !== '')
      throw new Error(`${where}: body sent but none declared`);
    return;
  }
  if (!(mediaType in content)) {
    throw new Error(
      `${where}: media type ${mediaType} not declared (declared: ${Object.keys(content).join(', ')})`,
    );
  }
  const schema = (content[mediaType] as Json).schema as Json | undefined;
  if (!schema) return;
  const responseRef =
    typeof (responses[key] as Json).$ref === 'string'
      ? `openapi${(responses[key] as Json).$ref as string}/${pointer('content', mediaType, 'schema')}`
      : `openapi#/${pointer('paths', route.template, route.method.toLowerCase(), 'responses', key, 'content', mediaType, 'schema')}`;
  checkBody(where, responseRef, response.body, mediaType, mediaType);
  if (mediaType === 'application/problem+json')
    assertProblemDocumented(
      `${where} (${route.operation.operationId})`,
      response.status,
      response.body,
      (route.operation['x-problem-types'] as string[] | undefined) ?? [],
    );
}

function checkBody(where: string, ref: string, body: unknown, mediaType: string, expectedType: string): void {
  if (mediaType !== expectedType) throw new Error(`${where}: expected ${expectedType}, got ${mediaType}`);
  if (!/json/.test(mediaType)) return;
  const validate = validatorFor(ref);
  if (!validate(body)) {
    throw new Error(
      `${where}: body does not match the contract: ${ajv.errorsText(validate.errors)}; body: ${JSON.stringify(body)}`,
    );
  }
}

/**
 * A fetch for generated and official clients under test: each answer is checked with
 * assertMatchesContract before the client sees it.
 */
export function contractCheckedFetch(
  implemented: Set<string>,
  send: (request: Request) => Promise<Response> = (request) => fetch(request),
): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await send(request);
    const text = await response.clone().text();
    const contentType = response.headers.get('content-type') ?? '';
    assertMatchesContract(
      request.method,
      new URL(request.url).pathname,
      {
        status: response.status,
        contentType,
        body: /json/.test(contentType) && text ? JSON.parse(text) : text || undefined,
        headers: response.headers,
      },
      implemented,
    );
    return response;
  };
}

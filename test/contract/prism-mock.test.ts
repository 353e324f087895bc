// QA and partners run `npm run mock` (Prism on the bundled contract) instead of the service, so the
// mock must tell the truth: every documented response and example is served with the status it is
// documented under and satisfies the contract; dynamic mode (bodies generated from the schemas)
// answers every operation validly; and an invalid request gets the same status and problem type as
// from the real service. One static and one dynamic mock, and one app, serve the whole file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { assertMatchesContract, openapiDocument as doc } from '../helpers/contract.ts';
import { type HttpUser, httpUser } from '../helpers/ledger-fixtures.ts';
import { type PrismProcess, startPrismMock } from '../proxy/lib/prism.ts';

/**
 * Generated answers checked per response shape in dynamic mode: Prism generates an answer from the
 * status, schema and headers an operation documents for its default answer, nothing else, so
 * operations documenting the same ones (a 204 with the same headers, `Asset` returned by a read
 * and by freeze) share the samples: each gets its share of DYNAMIC_SAMPLES, and at least
 * SAMPLES_PER_OPERATION (its routing and status).
 */
const DYNAMIC_SAMPLES = 100;
const SAMPLES_PER_OPERATION = 20;
/** Requests in flight at once against a mock. */
const CONCURRENCY = 16;

type Json = Record<string, unknown>;
const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function resolveRef(node: unknown): unknown {
  let current = node;
  while (isObject(current) && typeof current.$ref === 'string') {
    let target: unknown = doc;
    for (const token of current.$ref.slice(2).split('/'))
      target = (target as Json)[token.replaceAll('~1', '/').replaceAll('~0', '~')];
    current = target;
  }
  return current;
}

interface NamedExample {
  /** Absent for a media type's single `example`. */
  name?: string;
  value: unknown;
}

/** A media type's, parameter's or header's documented examples, in document order. */
function examplesOf(holder: Json): NamedExample[] {
  if ('example' in holder) return [{ value: holder.example }];
  return Object.entries(isObject(holder.examples) ? holder.examples : {}).flatMap(([name, example]) => {
    const resolved = resolveRef(example);
    return isObject(resolved) && 'value' in resolved ? [{ name, value: resolved.value }] : [];
  });
}

interface Operation {
  id: string;
  method: string;
  template: string;
  operation: Json;
  parameters: Json[];
}

const operations: Operation[] = Object.entries(doc.paths as Json).flatMap(([template, item]) =>
  METHODS.flatMap((method) => {
    const operation = (item as Json)[method];
    if (!isObject(operation)) return [];
    const parameters = [
      ...(((item as Json).parameters as unknown[]) ?? []),
      ...((operation.parameters as unknown[]) ?? []),
    ]
      .map(resolveRef)
      .filter(isObject);
    return [
      { id: String(operation.operationId), method: method.toUpperCase(), template, operation, parameters },
    ];
  }),
);

/** A value for a parameter: its example, else its schema's first example, default or enum value. */
function parameterValue(parameter: Json): string {
  const schema = resolveRef(parameter.schema);
  const value = [
    examplesOf(parameter)[0]?.value,
    isObject(schema) && Array.isArray(schema.examples) ? schema.examples[0] : undefined,
    isObject(schema) ? schema.default : undefined,
    isObject(schema) && Array.isArray(schema.enum) ? schema.enum[0] : undefined,
  ].find((candidate) => candidate !== undefined);
  if (value === undefined) throw new Error(`parameter ${String(parameter.name)} has no example`);
  return Array.isArray(value) ? value.join(',') : String(value);
}

interface Request {
  path: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

const PLACEHOLDER_CREDENTIALS = { Authorization: 'Bearer mock-token', 'X-API-Key': 'mock-key' };

function needsCredentials(operation: Json): boolean {
  const security = (operation.security ?? doc.security ?? []) as Json[];
  return security.length > 0 && !security.some((requirement) => Object.keys(requirement).length === 0);
}

/** The request the contract's own examples describe: every parameter and the body example. */
function exampleRequest(
  op: Operation,
  credentials: Record<string, string> = PLACEHOLDER_CREDENTIALS,
): Request {
  let path = op.template;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const parameter of op.parameters) {
    const name = String(parameter.name);
    if (parameter.in === 'path') {
      // Keep `:` readable (DIDs); encode what a path segment cannot hold.
      path = path.replace(`{${name}}`, encodeURIComponent(parameterValue(parameter)).replaceAll('%3A', ':'));
    } else if (parameter.required === true && parameter.in === 'query') {
      query.set(name, parameterValue(parameter));
    } else if (parameter.required === true && parameter.in === 'header') {
      headers[name] = parameterValue(parameter);
    }
  }
  if (needsCredentials(op.operation)) Object.assign(headers, credentials);
  let body: string | undefined;
  const requestBody = resolveRef(op.operation.requestBody);
  if (isObject(requestBody) && isObject(requestBody.content)) {
    const [mediaType, media] = Object.entries(requestBody.content)[0] as [string, Json];
    const schema = resolveRef(media.schema);
    const value =
      examplesOf(media)[0]?.value ??
      (isObject(schema) && Array.isArray(schema.examples) ? schema.examples[0] : undefined);
    if (value === undefined) throw new Error(`${op.id}: the request body has no example`);
    headers['Content-Type'] = mediaType;
    body =
      mediaType === 'application/x-www-form-urlencoded'
        ? new URLSearchParams(value as Record<string, string>).toString()
        : JSON.stringify(value);
  }
  return { path: query.size > 0 ? `${path}?${query}` : path, method: op.method, headers, body };
}

interface Answer {
  status: number;
  contentType: string;
  headers: Headers;
  text: string;
  body: unknown;
}

async function send(
  baseUrl: string,
  request: Request,
  extraHeaders: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(baseUrl + request.path, {
    method: request.method,
    headers: { ...request.headers, ...extraHeaders },
    body: request.body,
    redirect: 'manual',
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const body = text === '' ? undefined : /json/.test(contentType) ? JSON.parse(text) : text;
  return { status: response.status, contentType, headers: response.headers, text, body };
}

/** Throws unless the answer is one the contract allows for this request (status, media type, body, problem type). */
function checkAgainstContract(request: Request, answer: Answer): void {
  assertMatchesContract(request.method, request.path.split('?')[0], answer);
}

/** Runs `tasks` with at most `limit` in flight. */
async function pool<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

interface DocumentedAnswer {
  status: number;
  mediaType?: string;
  examples: NamedExample[];
}

/** Every (status, media type) an operation documents, with its examples. */
function documentedAnswers(op: Operation): DocumentedAnswer[] {
  return Object.entries(op.operation.responses as Json).flatMap(([code, declared]): DocumentedAnswer[] => {
    const response = resolveRef(declared) as Json;
    const content = isObject(response.content) ? response.content : {};
    const entries = Object.entries(content);
    if (entries.length === 0) return [{ status: Number(code), examples: [] }];
    return entries.map(([mediaType, media]) => ({
      status: Number(code),
      mediaType,
      examples: examplesOf(resolveRef(media) as Json),
    }));
  });
}

/** The answer Prism gives when no status is asked for: the lowest 2xx, else the lowest 3xx. */
function defaultStatus(op: Operation): number {
  const codes = Object.keys(op.operation.responses as Json)
    .filter((code) => /^[23]\d\d$/.test(code))
    .sort();
  return Number(codes.find((code) => code.startsWith('2')) ?? codes[0]);
}

/** What Prism generates an operation's default answer from: its status, content (schemas as referenced) and headers. */
function answerShape(op: Operation): string {
  const status = defaultStatus(op);
  const response = resolveRef((op.operation.responses as Json)[String(status)]) as Json;
  const content = isObject(response.content) ? response.content : {};
  const schemas = Object.entries(content).map(([mediaType, media]) => [mediaType, (media as Json).schema]);
  return JSON.stringify([status, schemas, response.headers ?? null]);
}

const operationsPerShape = new Map<string, number>();
for (const op of operations) {
  const shape = answerShape(op);
  operationsPerShape.set(shape, (operationsPerShape.get(shape) ?? 0) + 1);
}

/** The generated answers checked for an operation. */
const dynamicSamples = (op: Operation): number =>
  Math.max(
    SAMPLES_PER_OPERATION,
    Math.ceil(DYNAMIC_SAMPLES / (operationsPerShape.get(answerShape(op)) ?? 1)),
  );

const mocks: { static?: PrismProcess; dynamic?: PrismProcess } = {};

beforeAll(async () => {
  [mocks.static, mocks.dynamic] = await Promise.all([startPrismMock(), startPrismMock({ dynamic: true })]);
}, 60_000);

afterAll(async () => {
  await Promise.all([mocks.static?.close(), mocks.dynamic?.close()]);
});

describe('Prism mock (npm run mock), static: the documented answers', () => {
  it('covers every operation of the contract', () => {
    expect(operations.length).toBeGreaterThanOrEqual(56);
    const examples = operations.flatMap(documentedAnswers).reduce((n, a) => n + a.examples.length, 0);
    expect(examples).toBeGreaterThan(400);
  });

  it.each(operations)('$method $template ($id): every response and example, as documented', async (op) => {
    const base = mocks.static?.baseUrl ?? '';
    const request = exampleRequest(op);
    const failures: string[] = [];
    const check = async (
      what: string,
      prefer: string,
      expected: DocumentedAnswer,
      example?: NamedExample,
    ) => {
      const headers: Record<string, string> = prefer === '' ? {} : { Prefer: prefer };
      if (expected.mediaType) headers.Accept = expected.mediaType;
      const answer = await send(base, request, headers);
      try {
        expect(answer.status, answer.text).toBe(expected.status);
        if (example) expect(answer.body).toEqual(example.value);
        checkAgainstContract(request, answer);
        const problem = answer.body as { status?: unknown };
        if (/problem\+json/.test(answer.contentType)) expect(problem.status).toBe(expected.status);
      } catch (error) {
        failures.push(`${what}: ${(error as Error).message.split('\n')[0]}`);
      }
    };
    const expected = documentedAnswers(op);
    const tasks = expected.flatMap((answer) => [
      // Asked by status alone, Prism must serve the first documented example of that status.
      () => check(`Prefer code=${answer.status}`, `code=${answer.status}`, answer, answer.examples[0]),
      ...answer.examples
        .filter((example) => example.name !== undefined)
        .map(
          (example) => () =>
            check(
              `Prefer code=${answer.status}, example=${example.name}`,
              `code=${answer.status}, example=${example.name}`,
              answer,
              example,
            ),
        ),
    ]);
    // Unasked, the lowest documented success.
    const success = expected.find((answer) => answer.status === defaultStatus(op));
    if (success) tasks.push(() => check('no Prefer', '', success, success.examples[0]));
    await pool(tasks, CONCURRENCY);
    expect(failures).toEqual([]);
  });
});

describe(`Prism mock (npm run mock -- --dynamic): ${DYNAMIC_SAMPLES} generated answers per answer shape`, () => {
  it('checks at least DYNAMIC_SAMPLES answers of each shape', () => {
    const perShape = new Map<string, number>();
    for (const op of operations) {
      const shape = answerShape(op);
      perShape.set(shape, (perShape.get(shape) ?? 0) + dynamicSamples(op));
    }
    expect(perShape.size).toBeGreaterThan(50);
    for (const [shape, samples] of perShape) expect(samples, shape).toBeGreaterThanOrEqual(DYNAMIC_SAMPLES);
  });

  it.each(operations)(
    '$method $template ($id): every generated answer satisfies the contract',
    async (op) => {
      const base = mocks.dynamic?.baseUrl ?? '';
      const request = exampleRequest(op);
      const status = defaultStatus(op);
      const invalid: string[] = [];
      await pool(
        Array.from({ length: dynamicSamples(op) }, () => async () => {
          const answer = await send(base, request);
          try {
            expect(answer.status, answer.text).toBe(status);
            checkAgainstContract(request, answer);
          } catch (error) {
            invalid.push((error as Error).message.split('\n')[0]);
          }
        }),
        CONCURRENCY,
      );
      expect(invalid).toEqual([]);
    },
  );
});

interface InvalidCase {
  name: string;
  op: Operation;
  /** Builds the request from the operation's example request (with the given credentials). */
  request(credentials: Record<string, string>): Request;
}

/** The operations answering errors as problems (the OAuth endpoints and HTML pages keep their own formats). */
const problemOperations = operations.filter((op) => {
  const badRequest = resolveRef((op.operation.responses as Json)['400']);
  return (
    isObject(badRequest) && isObject(badRequest.content) && 'application/problem+json' in badRequest.content
  );
});

/** A value no path parameter's schema accepts: a space and a non-ASCII character. */
const INVALID_SEGMENT = encodeURIComponent(' ✗');

/** Invalid requests of the kinds integrators send, for every operation where each applies. */
const invalidCases: InvalidCase[] = problemOperations.flatMap((op) => {
  const cases: InvalidCase[] = [];
  if (needsCredentials(op.operation))
    cases.push({ name: 'no credentials', op, request: () => exampleRequest(op, {}) });
  if (exampleRequest(op).headers['Content-Type'] === 'application/json') {
    cases.push({
      name: 'a JSON array for the body object',
      op,
      request: (credentials) => ({ ...exampleRequest(op, credentials), body: '[]' }),
    });
    cases.push({
      name: 'a text/plain body',
      op,
      request: (credentials) => {
        const request = exampleRequest(op, credentials);
        return { ...request, headers: { ...request.headers, 'Content-Type': 'text/plain' }, body: 'x' };
      },
    });
  }
  for (const parameter of op.parameters.filter((p) => p.in === 'path')) {
    const schema = resolveRef(parameter.schema);
    if (!isObject(schema) || (schema.pattern === undefined && schema.format === undefined)) continue;
    cases.push({
      name: `an invalid path parameter ${String(parameter.name)}`,
      op,
      request: (credentials) => {
        const request = exampleRequest(op, credentials);
        const valid = encodeURIComponent(parameterValue(parameter)).replaceAll('%3A', ':');
        return { ...request, path: request.path.replace(valid, INVALID_SEGMENT) };
      },
    });
  }
  if (op.parameters.some((p) => p.in === 'query' && p.name === 'limit'))
    cases.push({
      name: 'limit=0',
      op,
      request: (credentials) => {
        const request = exampleRequest(op, credentials);
        const [path, query = ''] = request.path.split('?');
        const params = new URLSearchParams(query);
        params.set('limit', '0');
        return { ...request, path: `${path}?${params}` };
      },
    });
  return cases;
});

describe(`Prism mock and the service (${DB_KINDS[0]}): the same status and problem type for an invalid request`, () => {
  let service: TestApp;
  let admin: HttpUser;

  beforeAll(async () => {
    service = await startTestApp(DB_KINDS[0]);
    admin = await httpUser(service, 'admin');
  });

  afterAll(async () => {
    await service?.close();
  });

  it('covers every operation that answers problems and takes any input', () => {
    const covered = new Set(invalidCases.map((c) => c.op.id));
    const uncovered = problemOperations.filter((op) => !covered.has(op.id));
    expect(covered.size).toBeGreaterThan(35);
    for (const op of uncovered)
      expect({
        op: op.id,
        parameters: op.parameters.length,
        body: op.operation.requestBody !== undefined,
      }).toEqual({
        op: op.id,
        parameters: 0,
        body: false,
      });
  });

  it.each(invalidCases)('$op.method $op.template ($op.id): $name', async ({ request }) => {
    const toMock = request(PLACEHOLDER_CREDENTIALS);
    const mocked = await send(mocks.static?.baseUrl ?? '', toMock);
    checkAgainstContract(toMock, mocked);
    const toService = request(admin.headers);
    const real = await service.http(toService.method, toService.path, {
      headers: toService.headers,
      raw: toService.body,
    });
    expect(real.status, real.text).toBeGreaterThanOrEqual(400);
    expect({ status: mocked.status, type: (mocked.body as Json).type }).toEqual({
      status: real.status,
      type: (real.body as Json).type,
    });
  });
});

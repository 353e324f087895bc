/**
 * `npm run mock [-- --port 4010 --host 127.0.0.1 --dynamic --seed s --log-level info]`: Prism's
 * mock server on the bundled contract (generated/openapi/openapi.json), built from Prism's own
 * packages with one change, so that the mock answers as the service does.
 *
 * Prism answers a request that fails validation with the operation's 422 response when it has one
 * (its order is hard-coded: 422, then 400; @stoplight/prism-http `getExpectedCodesForViolations`).
 * The service answers every invalid request with 400 `/problems/validation-failed`, and documents
 * 422 only for a valid request it cannot honour (an `Idempotency-Key` reused with another body, an
 * impossible validity period). So for a request with validation errors the mock hides the 422
 * response and serves the 400 one, with its `/problems/validation-failed` example. Everything else
 * (routing, security and body validation, example and `Prefer` negotiation, dynamic generation)
 * is Prism's. Plain `prism mock` on the same document differs only there: it answers 422 on the
 * operations that document one.
 *
 * One change for speed only: Prism's router scores every operation of the document against every
 * request (a sixth of a dynamic mock's CPU in a profile); the mock remembers the operation each
 * method, path and `__server` was routed to (a pure function of those and the document), so a
 * request to a path seen before skips that. A request that matches no operation is routed afresh.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '@stoplight/prism-core';
import { getHttpOperationsFromSpec, type PrismHttpComponents } from '@stoplight/prism-http';
import prismMockModule from '@stoplight/prism-http/dist/mocker/index.js';
import prismRouteModule from '@stoplight/prism-http/dist/router/index.js';
import { createServer } from '@stoplight/prism-http-server';
import { generatedDir } from '../gen/paths.ts';

type PrismMock = PrismHttpComponents['mock'];
type PrismRoute = PrismHttpComponents['route'];
type IHttpOperation = Parameters<PrismMock>[0]['resource'];
type IHttpOperationResponse = IHttpOperation['responses'][number];
// A CommonJS module: its `default` export arrives as the namespace's `default` property.
const prismMock = ((prismMockModule as unknown as { default?: PrismMock }).default ??
  prismMockModule) as PrismMock;
const prismRoute = ((prismRouteModule as unknown as { default?: PrismRoute }).default ??
  prismRouteModule) as PrismRoute;

const VALIDATION_FAILED = '/problems/validation-failed';
const ERROR_SEVERITY = 0; // DiagnosticSeverity.Error

/** The 400 response with its `validation-failed` example first, so Prism serves that one. */
function validationFailedFirst(response: IHttpOperationResponse): IHttpOperationResponse {
  if (response.code !== '400') return response;
  return {
    ...response,
    contents: response.contents?.map((content) => ({
      ...content,
      examples: [...(content.examples ?? [])].sort(
        (a, b) => Number(!isValidationFailed(a)) - Number(!isValidationFailed(b)),
      ),
    })),
  };
}

function isValidationFailed(example: unknown): boolean {
  const value = (example as { value?: { type?: unknown } }).value;
  return typeof value === 'object' && value !== null && value.type === VALIDATION_FAILED;
}

/**
 * The document's `x-json-schema-faker` options, applied as `prism mock` means to: to the
 * json-schema-faker that Prism's generator uses. (prism-cli sets them on its own copy, which npm
 * installs beside prism-http's older one, so with the CLI they have no effect.)
 */
function configureGenerator(document: string): void {
  const contract = JSON.parse(readFileSync(document, 'utf8')) as { 'x-json-schema-faker'?: object };
  const fromPrismHttp = createRequire(createRequire(import.meta.url).resolve('@stoplight/prism-http'));
  const { JSONSchemaFaker } = fromPrismHttp('json-schema-faker') as {
    JSONSchemaFaker: { option(name: string, value: unknown): void };
  };
  for (const [name, value] of Object.entries(contract['x-json-schema-faker'] ?? {}))
    JSONSchemaFaker.option(
      name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()),
      value,
    );
}

/** Prism's mocker, answering an invalid request as the service does (see the file comment). */
const mock: PrismMock = (options) => {
  const invalid = options.input.validations.some((v) => v.severity === ERROR_SEVERITY);
  if (!invalid) return prismMock(options);
  const resource: IHttpOperation = {
    ...options.resource,
    responses: options.resource.responses
      .filter((response) => response.code !== '422')
      .map(validationFailedFirst),
  };
  return prismMock({ ...options, resource });
};

/** Routes remembered, in the order first routed; past ROUTES_REMEMBERED the oldest is forgotten. */
const ROUTES_REMEMBERED = 10_000;
const routes = new Map<string, ReturnType<PrismRoute>>();

/** Prism's router, remembering the operation a method, path and server were routed to. */
const route: PrismRoute = (options) => {
  const { method, url } = options.input;
  const key = `${method} ${url.baseUrl ?? ''} ${url.path}`;
  const known = routes.get(key);
  if (known) return known;
  const routed = prismRoute(options);
  if (routed._tag === 'Right') {
    if (routes.size >= ROUTES_REMEMBERED) routes.delete(routes.keys().next().value as string);
    routes.set(key, routed);
  }
  return routed;
};

const { values } = parseArgs({
  options: {
    port: { type: 'string', short: 'p', default: '4010' },
    host: { type: 'string', short: 'h', default: '127.0.0.1' },
    dynamic: { type: 'boolean', short: 'd', default: false },
    seed: { type: 'string' },
    document: { type: 'string', default: join(generatedDir, 'openapi', 'openapi.json') },
    'log-level': { type: 'string', default: 'info' },
  },
});

const logger = createLogger('MOCK', { level: values['log-level'] });
const operations = await getHttpOperationsFromSpec(values.document);
configureGenerator(values.document);
const server = createServer(operations, {
  cors: true,
  config: {
    mock: { dynamic: values.dynamic, ...(values.seed === undefined ? {} : { seed: values.seed }) },
    validateRequest: true,
    // Prism would re-validate its own answers only to log departures; the examples are checked by
    // test/contract/contract.test.ts and every answer by test/contract/prism-mock.test.ts.
    validateResponse: false,
    checkSecurity: true,
    errors: false,
    upstreamProxy: undefined,
    isProxy: false,
  },
  components: { logger, mock, route },
});
const address = await server.listen(Number(values.port), values.host);
console.log(
  `Prism is listening on ${address} (${values.dynamic ? 'dynamic' : 'static'} mock of ${values.document}, ${operations.length} operations)`,
);
const stop = (): void => {
  void server.close().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

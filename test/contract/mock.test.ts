// QA and partners run `npm run mock` (Prism) against the bundled contract: every GET must answer
// with its documented success and example, so the mock is believable without the service.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrismProcess, startPrismMock } from '../../scripts/proxy/lib/prism.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
type JsonObject = Record<string, unknown>;

const repoPath = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const contractPath = repoPath('generated/openapi/openapi.json');
const doc = JSON.parse(readFileSync(contractPath, 'utf8')) as JsonObject;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const toPointer = (path: readonly string[]): string =>
  path.map((t) => `/${encodeURIComponent(t.replaceAll('~', '~0').replaceAll('/', '~1'))}`).join('');

function resolveRef(node: unknown): unknown {
  let current = node;
  while (isObject(current) && typeof current.$ref === 'string') {
    let target: unknown = doc;
    for (const token of current.$ref.slice(2).split('/')) {
      target = (target as JsonObject)[token.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    current = target;
  }
  return current;
}

/**
 * The documented example of a media type, parameter or header: its `example`, else the first of
 * its named `examples` (with that name: Prism serves a named example only when asked for it with
 * `Prefer: example=<name>`, and otherwise builds a body from the schema).
 */
function documentedExample(holder: JsonObject): { found: boolean; name?: string; value?: unknown } {
  if ('example' in holder) return { found: true, value: holder.example };
  const [name, first] = Object.entries(isObject(holder.examples) ? holder.examples : {})[0] ?? [];
  const resolved = resolveRef(first);
  return isObject(resolved) && 'value' in resolved
    ? { found: true, name, value: resolved.value }
    : { found: false };
}

/** A value for a parameter: its example, else its schema's first example, default or enum value. */
function parameterValue(parameter: JsonObject): string {
  const example = documentedExample(parameter);
  const schema = resolveRef(parameter.schema);
  const candidates = [
    example.found ? example.value : undefined,
    isObject(schema) && Array.isArray(schema.examples) ? schema.examples[0] : undefined,
    isObject(schema) ? schema.default : undefined,
    isObject(schema) && Array.isArray(schema.enum) ? schema.enum[0] : undefined,
  ];
  const value = candidates.find((c) => c !== undefined);
  if (value === undefined) throw new Error(`parameter ${String(parameter.name)} has no example`);
  return Array.isArray(value) ? value.join(',') : String(value);
}

interface GetCase {
  name: string;
  url: string;
  headers: Record<string, string>;
  status: number;
  mediaType: string | undefined;
  media: JsonObject | undefined;
  /** JSON pointer (URI-encoded) of the media type's schema, where it really is (refs followed). */
  schemaPointer: string;
}

function getCases(): GetCase[] {
  const rootSecurity = Array.isArray(doc.security) ? doc.security : [];
  return Object.entries(isObject(doc.paths) ? doc.paths : {}).flatMap(([pathTemplate, item]) => {
    if (!isObject(item) || !isObject(item.get)) return [];
    const operation = item.get;
    const parameters = [
      ...(Array.isArray(item.parameters) ? item.parameters : []),
      ...(Array.isArray(operation.parameters) ? operation.parameters : []),
    ]
      .map((p) => resolveRef(p))
      .filter(isObject);
    let path = pathTemplate;
    const query = new URLSearchParams();
    const headers: Record<string, string> = {};
    for (const parameter of parameters) {
      if (parameter.in === 'path') {
        // Keep `:` readable (DIDs); encode what a path segment cannot hold.
        const value = encodeURIComponent(parameterValue(parameter)).replaceAll('%3A', ':');
        path = path.replace(`{${String(parameter.name)}}`, value);
      } else if (parameter.required === true && parameter.in === 'query') {
        query.set(String(parameter.name), parameterValue(parameter));
      } else if (parameter.required === true && parameter.in === 'header') {
        headers[String(parameter.name)] = parameterValue(parameter);
      }
    }
    const security = Array.isArray(operation.security) ? operation.security : rootSecurity;
    const needsCredentials =
      security.length > 0 && !security.some((r) => isObject(r) && Object.keys(r).length === 0);
    if (needsCredentials) Object.assign(headers, { Authorization: 'Bearer x', 'X-API-Key': 'y' });

    // The documented success Prism should pick: the lowest 2xx, else the lowest 3xx (redirects).
    const responses = isObject(operation.responses) ? operation.responses : {};
    const codes = Object.keys(responses)
      .filter((code) => /^[23]\d\d$/.test(code))
      .sort();
    const status = codes.find((code) => code.startsWith('2')) ?? codes[0];
    if (status === undefined) throw new Error(`GET ${pathTemplate} documents no success response`);
    const declared = responses[status];
    const responsePath =
      isObject(declared) && typeof declared.$ref === 'string'
        ? declared.$ref
            .slice(2)
            .split('/')
            .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'))
        : ['paths', pathTemplate, 'get', 'responses', status];
    const response = resolveRef(declared);
    const content = isObject(response) && isObject(response.content) ? response.content : {};
    const mediaType = Object.keys(content)[0];
    const media = mediaType === undefined ? undefined : resolveRef(content[mediaType]);
    if (mediaType !== undefined) headers.Accept = mediaType;
    const exampleName = isObject(media) ? documentedExample(media).name : undefined;
    headers.Prefer = exampleName === undefined ? `code=${status}` : `code=${status}, example=${exampleName}`;
    const search = query.size > 0 ? `?${query}` : '';
    return [
      {
        name: `GET ${pathTemplate} (${String(operation.operationId)})`,
        url: `${path}${search}`,
        headers,
        status: Number(status),
        mediaType,
        media: isObject(media) ? media : undefined,
        schemaPointer: toPointer([...responsePath, 'content', mediaType ?? '', 'schema']),
      },
    ];
  });
}

let prism: PrismProcess | undefined;
let baseUrl = '';

async function startPrism(): Promise<void> {
  prism = await startPrismMock();
  baseUrl = prism.baseUrl;
}

const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateSchema: false, logger: false }));
ajv.addSchema(doc, 'contract');

describe('Prism mock of the bundled OpenAPI document', () => {
  beforeAll(startPrism, 25_000);

  afterAll(async () => {
    await prism?.close();
  });

  const cases = getCases();

  it('covers at least one GET operation', () => {
    expect(cases.length).toBeGreaterThan(0);
  });

  it.each(cases)('$name answers its documented success and example', async (testCase) => {
    const response = await fetch(baseUrl + testCase.url, { headers: testCase.headers, redirect: 'manual' });
    const text = await response.text();
    expect(response.status, text).toBe(testCase.status);
    if (testCase.mediaType === undefined || testCase.media === undefined) return;

    const isJson = /json/.test(testCase.mediaType);
    const body: unknown = isJson ? JSON.parse(text) : text;
    const example = documentedExample(testCase.media);
    if (example.found) expect(body).toEqual(example.value);
    if (isJson && testCase.media.schema !== undefined) {
      const validate = ajv.getSchema(`contract#${testCase.schemaPointer}`);
      expect(validate?.(body), ajv.errorsText(validate?.errors)).toBe(true);
    }
  });
});

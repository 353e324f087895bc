// Checks the bundled contracts themselves: operation ids, the plan they were written from, and
// that every example they publish (what Prism serves, what partners copy) satisfies its schema.
import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
type JsonObject = Record<string, unknown>;

const readRepoFile = (path: string): string =>
  readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const openapi = JSON.parse(readRepoFile('generated/openapi/openapi.json')) as JsonObject;
const asyncapi = JSON.parse(readRepoFile('generated/asyncapi/asyncapi.json')) as JsonObject;

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const entries = (value: unknown): [string, unknown][] => (isObject(value) ? Object.entries(value) : []);
const toPointer = (path: readonly (string | number)[]): string =>
  path.map((t) => `/${String(t).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

function resolveRef(doc: JsonObject, node: unknown): unknown {
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

/** An example found in a document, and the JSON pointer of the schema it must satisfy. */
interface Example {
  where: string;
  schema: string;
  value: unknown;
}

/** Keywords whose value is a subschema, a list of them, or a map of them. */
const subschemaKeywords = [
  'items',
  'not',
  'additionalProperties',
  'contains',
  'propertyNames',
  'if',
  'then',
  'else',
];
const subschemaListKeywords = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const subschemaMapKeywords = ['properties', 'patternProperties', '$defs', 'dependentSchemas'];

/** The `examples` (and OpenAPI's `example`) of a schema and of all its subschemas. */
function schemaExamples(schema: unknown, path: (string | number)[], out: Example[]): void {
  if (!isObject(schema) || schema.$ref !== undefined) return;
  const pointer = toPointer(path);
  if (Array.isArray(schema.examples)) {
    schema.examples.forEach((value, i) => {
      out.push({ where: `${pointer}/examples/${i}`, schema: pointer, value });
    });
  }
  if ('example' in schema) out.push({ where: `${pointer}/example`, schema: pointer, value: schema.example });
  for (const keyword of subschemaKeywords) schemaExamples(schema[keyword], [...path, keyword], out);
  for (const keyword of subschemaListKeywords) {
    const list = schema[keyword];
    if (!Array.isArray(list)) continue;
    for (const [i, sub] of list.entries()) schemaExamples(sub, [...path, keyword, i], out);
  }
  for (const keyword of subschemaMapKeywords) {
    for (const [key, sub] of entries(schema[keyword])) schemaExamples(sub, [...path, keyword, key], out);
  }
}

/** Every example of the OpenAPI document: media types, parameters, headers, schemas. */
function openApiExamples(doc: JsonObject): Example[] {
  const out: Example[] = [];
  const visit = (node: unknown, path: (string | number)[]): void => {
    if (Array.isArray(node)) {
      for (const [i, item] of node.entries()) visit(item, [...path, i]);
      return;
    }
    if (!isObject(node) || node.$ref !== undefined) return;
    const parent = path.at(-1);
    const grandparent = path.at(-2);
    if (parent === 'schema' || grandparent === 'schemas') {
      schemaExamples(node, path, out);
      return;
    }
    if (isObject(node.schema)) {
      // A media type, a parameter or a header: its examples must satisfy its schema.
      const schema = toPointer([...path, 'schema']);
      if ('example' in node)
        out.push({ where: toPointer([...path, 'example']), schema, value: node.example });
      for (const [name, example] of entries(node.examples)) {
        const resolved = resolveRef(doc, example);
        if (isObject(resolved) && 'value' in resolved) {
          out.push({ where: toPointer([...path, 'examples', name]), schema, value: resolved.value });
        }
      }
    }
    for (const [key, value] of Object.entries(node)) {
      if (!key.startsWith('x-') && key !== 'example' && key !== 'examples') visit(value, [...path, key]);
    }
  };
  visit(doc, []);
  return out;
}

/** Every message example of the AsyncAPI document (payload and headers), and its schemas' examples. */
function asyncApiExamples(doc: JsonObject): Example[] {
  const out: Example[] = [];
  const messageGroups: [(string | number)[], unknown][] = [
    ...entries(doc.channels).map(([id, channel]): [(string | number)[], unknown] => [
      ['channels', id, 'messages'],
      isObject(channel) ? channel.messages : undefined,
    ]),
    [['components', 'messages'], isObject(doc.components) ? doc.components.messages : undefined],
  ];
  for (const [groupPath, group] of messageGroups) {
    for (const [name, message] of entries(group)) {
      if (!isObject(message) || message.$ref !== undefined || !Array.isArray(message.examples)) continue;
      const path = [...groupPath, name];
      message.examples.forEach((example: unknown, i: number) => {
        if (!isObject(example)) return;
        for (const part of ['payload', 'headers'] as const) {
          if (!(part in example)) continue;
          const multiFormat = isObject(message[part]) && isObject((message[part] as JsonObject).schema);
          const schemaPath = multiFormat ? [...path, part, 'schema'] : [...path, part];
          out.push({
            where: toPointer([...path, 'examples', i, part]),
            schema: toPointer(schemaPath),
            value: example[part],
          });
        }
      });
    }
  }
  const schemas = isObject(doc.components) ? doc.components.schemas : undefined;
  for (const [name, schema] of entries(schemas)) schemaExamples(schema, ['components', 'schemas', name], out);
  return out;
}

/** Validates each example against the schema at its pointer, with JSON Schema 2020-12 and formats. */
function invalidExamples(doc: JsonObject, examples: Example[]): string[] {
  // strict: false because OpenAPI/AsyncAPI documents carry keywords JSON Schema does not know.
  const ajv = addFormats(
    new Ajv2020({ allErrors: true, strict: false, validateSchema: false, logger: false }),
  );
  ajv.addSchema(doc, 'contract');
  return examples.flatMap(({ where, schema, value }) => {
    const encoded = schema
      .split('/')
      .map((token) => encodeURIComponent(token))
      .join('/');
    const validate = ajv.getSchema(`contract#${encoded}`);
    if (validate === undefined) return [`${where}: no schema at ${schema}`];
    if (validate(value)) return [];
    return [`${where}: ${ajv.errorsText(validate.errors, { dataVar: 'example' })}`];
  });
}

/** operationIds listed in docs/contract-plan.md: the second column's first word of each operation row. */
function plannedOperationIds(): string[] {
  return readRepoFile('docs/contract-plan.md')
    .split('\n')
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .filter((cells) => cells.length > 3 && /^(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS) \//.test(cells[1]))
    .map((cells) => cells[2].split(/\s+/)[0]);
}

const operations = entries(openapi.paths).flatMap(([path, item]) =>
  httpMethods
    .filter((method) => isObject(item) && isObject(item[method]))
    .map((method) => ({ method, path, operation: (item as JsonObject)[method] as JsonObject })),
);

describe('bundled OpenAPI document', () => {
  it('gives every operation an operationId', () => {
    const missing = operations.filter(({ operation }) => typeof operation.operationId !== 'string');
    expect(missing.map(({ method, path }) => `${method.toUpperCase()} ${path}`)).toEqual([]);
  });

  it('uses each operationId once', () => {
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it('documents a success (2xx, or 3xx for redirects) for every operation', () => {
    const without = operations.filter(
      ({ operation }) =>
        !Object.keys(isObject(operation.responses) ? operation.responses : {}).some((c) => /^[23]/.test(c)),
    );
    expect(without.map(({ method, path }) => `${method.toUpperCase()} ${path}`)).toEqual([]);
  });

  it('documents a client error (4xx) for every operation that takes input or credentials', () => {
    const rootSecurity = Array.isArray(openapi.security) ? openapi.security : [];
    const item = (path: string): JsonObject =>
      isObject(openapi.paths) ? (openapi.paths[path] as JsonObject) : {};
    const takesInput = ({ path, operation }: (typeof operations)[number]): boolean => {
      const security = Array.isArray(operation.security) ? operation.security : rootSecurity;
      const needsCredentials =
        security.length > 0 && !security.some((r) => isObject(r) && Object.keys(r).length === 0);
      const parameters = [item(path).parameters, operation.parameters].flatMap((p) =>
        Array.isArray(p) ? p : [],
      );
      return needsCredentials || parameters.length > 0 || operation.requestBody !== undefined;
    };
    const without = operations.filter(
      (op) =>
        takesInput(op) &&
        !Object.keys(isObject(op.operation.responses) ? op.operation.responses : {}).some((c) =>
          /^4/.test(c),
        ),
    );
    expect(without.map(({ method, path }) => `${method.toUpperCase()} ${path}`)).toEqual([]);
  });

  it('has exactly the operations of docs/contract-plan.md', () => {
    const planned = plannedOperationIds();
    const actual = operations.map(({ operation }) => String(operation.operationId));
    expect(planned.length).toBeGreaterThan(0);
    expect({
      plannedButMissing: planned.filter((id) => !actual.includes(id)),
      notInPlan: actual.filter((id) => !planned.includes(id)),
    }).toEqual({ plannedButMissing: [], notInPlan: [] });
  });

  it('gives every request body and every response body an example of its own (Prism serves it)', () => {
    const withoutExample: string[] = [];
    const check = (where: string, content: unknown): void => {
      for (const [mediaType, media] of entries(resolveRef(openapi, content))) {
        const m = resolveRef(openapi, media);
        const has = isObject(m) && ('example' in m || entries(m.examples).length > 0);
        if (!has) withoutExample.push(`${where} ${mediaType}`);
      }
    };
    for (const { method, operation } of operations) {
      const body = resolveRef(openapi, operation.requestBody);
      if (isObject(body)) check(`${operation.operationId} request`, body.content);
      for (const [status, response] of entries(operation.responses)) {
        const resolved = resolveRef(openapi, response);
        if (isObject(resolved)) check(`${operation.operationId} ${method} ${status}`, resolved.content);
      }
    }
    expect(withoutExample).toEqual([]);
  });

  it('publishes only examples that satisfy their schemas', () => {
    const examples = openApiExamples(openapi);
    expect(examples.length).toBeGreaterThan(0);
    expect(invalidExamples(openapi, examples)).toEqual([]);
  });
});

describe('bundled AsyncAPI document', () => {
  it('parses with @asyncapi/parser without errors', async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(asyncapi));
    const errors = diagnostics.filter((d) => d.severity === 0);
    expect(errors.map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).toEqual([]);
    expect(document).toBeDefined();
  });

  it('publishes only message examples that satisfy their payload and header schemas', () => {
    const examples = asyncApiExamples(asyncapi);
    expect(examples.some((e) => e.where.endsWith('/payload'))).toBe(true);
    expect(invalidExamples(asyncapi, examples)).toEqual([]);
  });
});

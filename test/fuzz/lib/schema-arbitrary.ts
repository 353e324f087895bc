// JSON Schema (2020-12, the subset the contract uses) -> fast-check arbitrary of values that satisfy it.
// Component schemas named in `pools` also draw, half of the time, from values known to exist in the
// running service (a real asset id, a wallet the caller owns), so valid requests get past "not found"
// and reach the deeper code paths.
import fc from 'fast-check';
import { type Json, refName, resolve, type Schema } from './contract.ts';

/** Known live values by component schema name (`AssetId`) or parameter (`param:transfer_id`). */
export type Pools = ReadonlyMap<string, readonly unknown[]>;

/** A guard against recursive schemas: deep enough for the deepest body (mintBatch: items, oneOf, metadata, attributes, value). */
const MAX_DEPTH = 20;
/** Keep generated strings and arrays short unless the schema demands more: requests stay fast. */
const SPAN = 24;

/** Schemas with only annotations besides `$ref` are the referenced schema itself. */
const ANNOTATIONS = new Set([
  'description',
  'title',
  'examples',
  'example',
  'default',
  'writeOnly',
  'readOnly',
]);

/** Combines schemas that must all hold (allOf, a oneOf branch with its base): properties and required add up. */
export function merge(...schemas: Json[]): Json {
  const result: Json = {};
  for (const schema of schemas) {
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'properties') result.properties = { ...(result.properties as Json), ...(value as Json) };
      else if (key === 'required')
        result.required = [...new Set([...((result.required as string[]) ?? []), ...(value as string[])])];
      else result[key] = value;
    }
  }
  return result;
}

function withPool(
  arbitrary: fc.Arbitrary<unknown>,
  pool: readonly unknown[] | undefined,
): fc.Arbitrary<unknown> {
  return pool && pool.length > 0 ? fc.oneof(fc.constantFrom(...pool), arbitrary) : arbitrary;
}

function inferType(schema: Json): string | string[] | undefined {
  if (schema.type !== undefined) return schema.type as string | string[];
  if (schema.properties || schema.required || schema.additionalProperties !== undefined) return 'object';
  if (schema.items || schema.prefixItems) return 'array';
  if (schema.pattern || schema.format || schema.minLength !== undefined) return 'string';
  if (schema.minimum !== undefined || schema.maximum !== undefined) return 'number';
  return undefined;
}

export function arbitraryFor(schema: Schema, pools: Pools = new Map(), depth = 0): fc.Arbitrary<unknown> {
  if (schema === true || (typeof schema === 'object' && Object.keys(schema).length === 0)) {
    return fc.jsonValue({ maxDepth: 2 });
  }
  if (schema === false) throw new Error('no value satisfies the schema `false`');
  if (depth > MAX_DEPTH) throw new Error('schema nests too deep to generate');

  if (typeof schema.$ref === 'string') {
    const { $ref: _, ...siblings } = schema;
    const constraints = Object.fromEntries(Object.entries(siblings).filter(([k]) => !ANNOTATIONS.has(k)));
    const target = resolve(schema) as Json;
    const inner = arbitraryFor(merge(target, constraints), pools, depth + 1);
    return withPool(inner, pools.get(refName(schema) as string));
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    return arbitraryFor(merge(...(allOf as Schema[]).map(flatten), rest), pools, depth + 1);
  }
  const choices = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (Array.isArray(choices)) {
    const { oneOf: _o, anyOf: _a, ...base } = schema;
    const branches = choices.map(flatten);
    return fc.oneof(
      ...branches.map((branch, index) => {
        const merged = merge(base, branch);
        // A branch that only says which key is required (exactly one of jwt/credential/...) must
        // not carry the keys the other branches require, or it would match them too.
        if (schema.oneOf && merged.properties) {
          const mine = new Set((branch.required as string[]) ?? []);
          const others = branches
            .filter((_, i) => i !== index)
            .flatMap((other) => (other.required as string[]) ?? [])
            .filter((key) => !mine.has(key) && !((base.required as string[]) ?? []).includes(key));
          merged.properties = Object.fromEntries(
            Object.entries(merged.properties as Json).filter(([key]) => !others.includes(key)),
          );
        }
        return arbitraryFor(merged, pools, depth + 1);
      }),
    );
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));

  const type = inferType(schema);
  if (Array.isArray(type))
    return fc.oneof(...type.map((t) => arbitraryFor({ ...schema, type: t }, pools, depth)));
  switch (type) {
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
    case 'number':
      return numberArbitrary(schema, type);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return arrayArbitrary(schema, pools, depth);
    case 'object':
      return objectArbitrary(schema, pools, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A `$ref` or `allOf` member as a plain object schema. */
function flatten(schema: Schema): Json {
  if (typeof schema === 'boolean') return {};
  return typeof schema.$ref === 'string'
    ? merge(resolve(schema) as Json, { ...schema, $ref: undefined })
    : schema;
}

const codePoints = (value: string): number => [...value].length;

function stringArbitrary(schema: Json): fc.Arbitrary<unknown> {
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = (schema.maxLength as number | undefined) ?? Number.POSITIVE_INFINITY;
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : undefined;
  const fits = (value: string) =>
    codePoints(value) >= minLength && codePoints(value) <= maxLength && (!pattern || pattern.test(value));
  let base: fc.Arbitrary<string>;
  if (schema.format === 'date-time') {
    base = fc
      .date({
        min: new Date('2000-01-01T00:00:00Z'),
        max: new Date('2099-12-31T23:59:59Z'),
        noInvalidDate: true,
      })
      .map((date) => date.toISOString());
  } else if (schema.format === 'uri' || schema.format === 'uri-reference') {
    // Loopback http and https URLs: those satisfy every URI pattern of the contract (redirect URIs).
    base = fc.oneof(
      fc.webUrl({ validSchemes: ['https'], withQueryParameters: true }),
      fc.webPath().map((path) => `http://127.0.0.1:8765${path.startsWith('/') ? path : `/${path}`}`),
    );
  } else if (pattern) {
    // `^[class]+$` says nothing of length: bound the repetition so minLength is met without retries.
    const single = /^\^(\[[^\]]+\])[+*]\$$/.exec(pattern.source);
    const upper = Math.min(maxLength, minLength + SPAN);
    base = fc.stringMatching(single ? new RegExp(`^${single[1]}{${minLength},${upper}}$`, 'u') : pattern);
  } else {
    // Plain ASCII or any code point (one unit is one code point, as maxLength counts them).
    const lengths = { minLength, maxLength: Math.min(maxLength, minLength + SPAN) };
    base = fc.oneof(
      fc.string({ ...lengths, unit: 'grapheme-ascii' }),
      fc.string({ ...lengths, unit: 'binary' }),
    );
  }
  return base.filter(fits);
}

function numberArbitrary(schema: Json, type: 'integer' | 'number'): fc.Arbitrary<unknown> {
  const exclusiveMin = schema.exclusiveMinimum as number | undefined;
  const exclusiveMax = schema.exclusiveMaximum as number | undefined;
  if (type === 'integer') {
    const min =
      (schema.minimum as number | undefined) ?? (exclusiveMin !== undefined ? exclusiveMin + 1 : -1e9);
    const max =
      (schema.maximum as number | undefined) ?? (exclusiveMax !== undefined ? exclusiveMax - 1 : 1e9);
    return fc.integer({ min, max });
  }
  return fc.double({
    min: (schema.minimum as number | undefined) ?? exclusiveMin ?? -1e9,
    max: (schema.maximum as number | undefined) ?? exclusiveMax ?? 1e9,
    minExcluded: exclusiveMin !== undefined,
    maxExcluded: exclusiveMax !== undefined,
    noNaN: true,
    noDefaultInfinity: true,
  });
}

function arrayArbitrary(schema: Json, pools: Pools, depth: number): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.prefixItems)) {
    return fc.tuple(...(schema.prefixItems as Schema[]).map((item) => arbitraryFor(item, pools, depth + 1)));
  }
  const minLength = (schema.minItems as number | undefined) ?? 0;
  const maxLength = Math.min(
    (schema.maxItems as number | undefined) ?? Number.POSITIVE_INFINITY,
    minLength + 4,
  );
  const items = arbitraryFor((schema.items as Schema | undefined) ?? true, pools, depth + 1);
  return schema.uniqueItems
    ? fc.uniqueArray(items, { minLength, maxLength, selector: (value) => JSON.stringify(value) })
    : fc.array(items, { minLength, maxLength });
}

/** Drops each key whose `dependentRequired` keys are not all present, until none is left wanting. */
function withDependents(value: Json, dependents: Record<string, string[]>): Json {
  const result = { ...value };
  for (let changed = true; changed; ) {
    changed = false;
    for (const [key, needs] of Object.entries(dependents))
      if (key in result && needs.some((need) => !(need in result))) {
        delete result[key];
        changed = true;
      }
  }
  return result;
}

function objectArbitrary(schema: Json, pools: Pools, depth: number): fc.Arbitrary<unknown> {
  const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
  const required = (schema.required as string[] | undefined) ?? [];
  const maxKeys = schema.maxProperties as number | undefined;
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties))
    model[name] = arbitraryFor(property, pools, depth + 1);
  // Required keys without a property schema accept any value.
  for (const name of required) model[name] ??= fc.jsonValue({ maxDepth: 1 });
  const dependents = schema.dependentRequired as Record<string, string[]> | undefined;
  const generated =
    maxKeys === 0
      ? fc.constant({})
      : fc.record(model, { requiredKeys: required.filter((name) => name in model) });
  const record = dependents ? generated.map((value) => withDependents(value as Json, dependents)) : generated;
  const extra = schema.additionalProperties;
  if (extra === undefined || extra === false || maxKeys === 0 || Object.keys(properties).length > 0)
    return record;
  const values = arbitraryFor(extra === true ? true : (extra as Schema), pools, depth + 1);
  return fc
    .tuple(record, fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), values, { maxKeys: 3 }))
    .map(([known, more]) => ({ ...more, ...(known as Json) }));
}

// Schema-aware damage to a valid value: each mutator takes the node's schema and proposes what the
// contract forbids there (another JSON type, one past a bound, a broken checksum, a missing required
// key...). Locations are chosen by fast-check, so failures shrink and replay by seed.
import fc from 'fast-check';
import { type Json, resolve, type Schema } from './contract.ts';
import { merge } from './schema-arbitrary.ts';

export type Path = (string | number)[];

/** A schema with `$ref`s followed and combinators folded into one view of its keywords. */
export function view(schema: Schema | undefined): Json {
  if (schema === undefined || typeof schema === 'boolean') return {};
  let current = resolve(schema) as Json;
  if (Array.isArray(current.allOf)) current = merge(current, ...(current.allOf as Schema[]).map(view));
  const choices = (current.oneOf ?? current.anyOf) as Schema[] | undefined;
  if (Array.isArray(choices)) current = merge(current, ...choices.map(view));
  return current;
}

/** The schema that governs the value at `path` (object keys through properties, indices through items). */
export function schemaAt(schema: Schema | undefined, path: Path): Json {
  let current = view(schema);
  for (const step of path) {
    if (typeof step === 'number') {
      const prefix = current.prefixItems as Schema[] | undefined;
      current = view(prefix?.[step] ?? (current.items as Schema | undefined));
    } else {
      const properties = (current.properties as Record<string, Schema> | undefined) ?? {};
      const extra = current.additionalProperties;
      current = view(properties[step] ?? (typeof extra === 'object' ? extra : undefined));
    }
  }
  return current;
}

/** Every location in a JSON value, the root first. */
export function locations(value: unknown, path: Path = []): Path[] {
  const result: Path[] = [path];
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) result.push(...locations(item, [...path, i]));
  } else if (value && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) result.push(...locations(item, [...path, key]));
  return result;
}

export function getAt(value: unknown, path: Path): unknown {
  return path.reduce<unknown>((node, step) => (node as Record<string | number, unknown>)?.[step], value);
}

/** A copy of `value` with the node at `path` replaced (or removed, for `undefined` under an object). */
export function setAt(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [step, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    copy[step as number] = setAt(copy[step as number], rest, replacement);
    return copy;
  }
  const copy = { ...(value as Json) };
  const next = setAt(copy[step as string], rest, replacement);
  if (next === undefined) delete copy[step as string];
  else copy[step as string] = next;
  return copy;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (Number.isInteger(value)) return 'integer';
  return typeof value;
}

function declaredTypes(schema: Json): string[] {
  if (Array.isArray(schema.type)) return schema.type as string[];
  if (typeof schema.type === 'string')
    return schema.type === 'number' ? ['number', 'integer'] : [schema.type];
  return [];
}

/** Strings meant to trip decoders, normalisers and databases; fast-check adds its own on top. */
export const awkwardString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    '\ud800',
    '\uffff',
    'e\u0301',
    '\u202e',
    '\u200b',
    '\ufeff',
    "'; --",
    '%00',
    '{{7*7}}',
  ),
);

/** Values of another JSON type than the schema declares. */
function wrongType(schema: Json): fc.Arbitrary<unknown> {
  const types = declaredTypes(schema);
  return fc
    .oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.string({ maxLength: 8 }),
      fc.array(fc.integer(), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
    )
    .filter((value) => types.length === 0 || !types.includes(jsonType(value)));
}

/** Just past each bound the schema sets, and far past it. */
function outOfBounds(schema: Json): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [];
  if (typeof schema.maxLength === 'number') options.push(fc.constant('x'.repeat(schema.maxLength + 1)));
  if (typeof schema.minLength === 'number' && schema.minLength > 0)
    options.push(fc.constant('x'.repeat(schema.minLength - 1)));
  if (typeof schema.maximum === 'number') options.push(fc.constant(schema.maximum + 1));
  if (typeof schema.minimum === 'number') options.push(fc.constant(schema.minimum - 1));
  if (typeof schema.maxItems === 'number')
    options.push(fc.constant(Array.from({ length: schema.maxItems + 1 }, (_, i) => i)));
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern, 'u');
    options.push(awkwardString.filter((value) => !pattern.test(value)));
  }
  if (schema.enum || 'const' in schema) options.push(fc.string({ minLength: 1, maxLength: 12 }));
  options.push(
    fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, -(2 ** 63), 0.5, -0, 1e-320),
    fc.integer({ min: 10_000, max: 60_000 }).map((length) => 'y'.repeat(length)),
  );
  return fc.oneof(...options);
}

/** Flips the case of one hex letter of an address: a wrong EIP-55 checksum (or a newly mixed case). */
export function flipChecksum(address: string, at: number): string {
  const letters = [...address.slice(2)].flatMap((char, i) => (/[a-fA-F]/.test(char) ? [i + 2] : []));
  if (letters.length === 0) return address;
  const index = letters[at % letters.length];
  const char = address[index];
  const flipped = char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase();
  return address.slice(0, index) + flipped + address.slice(index + 1);
}

export const ADDRESS = /^0[xX][0-9a-fA-F]{40}$/;

/**
 * Stands for JSON text spliced in after serialisation: nesting deeper than JSON.stringify can
 * recurse, and numbers no double can hold.
 */
export const RAW_PLACEHOLDER = '__fuzz_raw_json__';

const rawJson: fc.Arbitrary<{ label: string; raw: string }> = fc.oneof(
  fc.integer({ min: 2_000, max: 50_000 }).map((depth) => ({
    label: 'deep-nesting',
    raw: `${'['.repeat(depth)}1${']'.repeat(depth)}`,
  })),
  fc
    .integer({ min: 310, max: 5_000 })
    .map((digits) => ({ label: 'huge-number', raw: `9${'0'.repeat(digits)}` })),
  fc.constantFrom('1e400', '-1e400', '1e-400', '-0', '0.1e1').map((raw) => ({ label: 'huge-number', raw })),
);

export interface BodyEdit {
  label: string;
  body: unknown;
  /** JSON text that replaces the string RAW_PLACEHOLDER once the body is serialised. */
  raw?: string;
}

/** One damaging edit of a structured body, labelled for the report. */
export function mutateBody(body: unknown, schema: Schema): fc.Arbitrary<BodyEdit> {
  const all = locations(body);
  return fc.nat({ max: all.length - 1 }).chain((index) => {
    const path = all[index];
    const node = getAt(body, path);
    const nodeSchema = schemaAt(schema, path);
    const edits: fc.Arbitrary<BodyEdit>[] = [
      wrongType(nodeSchema).map((value) => ({ label: 'wrong-type', body: setAt(body, path, value) })),
      outOfBounds(nodeSchema).map((value) => ({ label: 'out-of-bounds', body: setAt(body, path, value) })),
      awkwardString.map((value) => ({ label: 'unicode', body: setAt(body, path, value) })),
      rawJson.map(({ label, raw }) => ({ label, body: setAt(body, path, RAW_PLACEHOLDER), raw })),
    ];
    if (node && typeof node === 'object' && !Array.isArray(node)) {
      edits.push(
        fc
          .tuple(fc.string({ minLength: 1, maxLength: 16 }), fc.jsonValue({ maxDepth: 2 }))
          .map(([key, value]) => ({
            label: 'extra-field',
            body: setAt(body, path, { ...(node as Json), [key]: value }),
          })),
      );
      const required = ((nodeSchema.required as string[] | undefined) ?? []).filter(
        (key) => key in (node as Json),
      );
      if (required.length > 0)
        edits.push(
          fc.constantFrom(...required).map((key) => ({
            label: 'missing-required',
            body: setAt(body, [...path, key], undefined),
          })),
        );
    }
    if (typeof node === 'string' && ADDRESS.test(node))
      edits.push(
        fc.nat().map((at) => ({ label: 'bad-checksum', body: setAt(body, path, flipChecksum(node, at)) })),
      );
    return fc.oneof(...edits);
  });
}

// Requests for one operation: a valid one drawn from the contract's schemas (parameters, body,
// credentials of a real user), then, most of the time, one mutation of it: broken credentials, a
// damaged body node, a malformed or mistyped body, a bad path id, bad query values, a bad header or
// an undeclared method.
import fc from 'fast-check';
import { declaredMethods, type Operation, type Parameter } from './contract.ts';
import {
  ADDRESS,
  awkwardString,
  type BodyEdit,
  flipChecksum,
  mutateBody,
  RAW_PLACEHOLDER,
} from './mutations.ts';
import { arbitraryFor, type Pools } from './schema-arbitrary.ts';
import type { World } from './world.ts';

export interface FuzzRequest {
  operationId: string;
  /** `valid`, or what was broken: `body:wrong-type`, `credentials:revoked-key`, `path:bad-encoding`... */
  mutation: string;
  method: string;
  /** Path and query string, as sent. */
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** An oidc-provider operation: only "no 5xx" is required of it. */
  oauth: boolean;
}

interface Draft {
  op: Operation;
  method: string;
  path: Record<string, string>;
  query: [string, string][];
  headers: Record<string, string>;
  /** The structured body; undefined when none is sent. */
  body: unknown;
  /** Replaces the serialised body (raw mutations). */
  text?: string | Uint8Array;
  /** Replaces the body's content type; null sends none. */
  contentType?: string | null;
  raw?: string;
  mutation: string;
}

const BODY_LIMIT_BYTES = 100 * 1024;

function serialiseParameter(value: unknown): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}

function parameterArbitrary(parameter: Parameter, pools: Pools): fc.Arbitrary<string> {
  const generated = arbitraryFor(parameter.schema, pools);
  const pool = parameter.poolKey.startsWith('param:') ? pools.get(parameter.poolKey) : undefined;
  const value = pool?.length ? fc.oneof(fc.constantFrom(...pool), generated) : generated;
  return value.map(serialiseParameter);
}

function validDraft(op: Operation, world: World): fc.Arbitrary<Draft> {
  const model: Record<string, fc.Arbitrary<string | undefined>> = {};
  for (const parameter of op.parameters) {
    const value = parameterArbitrary(parameter, world.pools);
    model[`${parameter.in}:${parameter.name}`] = parameter.required
      ? value
      : fc.option(value, { nil: undefined });
  }
  const body = op.body
    ? op.body.required
      ? arbitraryFor(op.body.schema, world.pools)
      : fc.option(arbitraryFor(op.body.schema, world.pools), { nil: undefined })
    : fc.constant(undefined);
  const actor = fc.constantFrom(...Object.values(world.actors));
  return fc.record({ params: fc.record(model), body, actor }).map(({ params, body, actor }) => {
    const draft: Draft = { op, method: op.method, path: {}, query: [], headers: {}, body, mutation: 'valid' };
    for (const parameter of op.parameters) {
      const value = params[`${parameter.in}:${parameter.name}`];
      if (value === undefined) continue;
      if (parameter.in === 'path') draft.path[parameter.name] = value;
      else if (parameter.in === 'query') draft.query.push([parameter.name, value]);
      else draft.headers[parameter.name.toLowerCase()] = value;
    }
    if (op.credentials !== 'none') {
      draft.headers.authorization = actor.headers.authorization;
      if (op.credentials === 'bearer+key') draft.headers['x-api-key'] = actor.headers['x-api-key'];
    }
    return draft;
  });
}

const edit = (draft: Draft, mutation: string, change: Partial<Draft>): Draft => ({
  ...draft,
  ...change,
  mutation,
});

function badCredentials(draft: Draft, world: World): fc.Arbitrary<Draft> {
  return fc.constantFrom(...world.badCredentials).map((credentials) => {
    const { authorization: _a, 'x-api-key': _k, ...rest } = draft.headers;
    return edit(draft, `credentials:${credentials.label}`, { headers: { ...rest, ...credentials.headers } });
  });
}

function damagedBody(draft: Draft): fc.Arbitrary<Draft> {
  return mutateBody(draft.body, draft.op.body?.schema ?? true).map(({ label, body, raw }: BodyEdit) =>
    edit(draft, `body:${label}`, { body, raw }),
  );
}

const mediaTypes = fc.oneof(
  fc.constantFrom(
    'text/plain',
    'application/xml',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    'application/json; charset=utf-16',
    'application/json-patch+json',
  ),
  fc.stringMatching(/^[a-z]{1,8}\/[a-z0-9.+-]{1,12}$/),
);

function malformedBody(draft: Draft): fc.Arbitrary<Draft> {
  const text = JSON.stringify(draft.body ?? {});
  const firstKey = Object.keys((draft.body as object) ?? {})[0];
  const options: fc.Arbitrary<Draft>[] = [
    fc
      .nat()
      .map((at) => edit(draft, 'raw:truncated-json', { text: text.slice(0, at % Math.max(1, text.length)) })),
    fc
      .string({ unit: 'binary', maxLength: 64 })
      .map((garbage) => edit(draft, 'raw:garbage', { text: garbage })),
    fc
      .uint8Array({ minLength: 1, maxLength: 64 })
      .map((bytes) =>
        edit(draft, 'raw:invalid-utf8', { text: new Uint8Array([0x7b, 0xff, 0xfe, ...bytes]) }),
      ),
    fc
      .jsonValue({ maxDepth: 2 })
      .filter((value) => value === null || typeof value !== 'object' || Array.isArray(value))
      .map((value) => edit(draft, 'raw:not-an-object', { text: JSON.stringify(value) })),
    fc.constant(edit(draft, 'raw:empty', { text: '' })),
    mediaTypes.map((type) => edit(draft, 'raw:wrong-content-type', { contentType: type })),
    fc.constant(edit(draft, 'raw:no-content-type', { contentType: null })),
    fc
      .integer({ min: BODY_LIMIT_BYTES + 1, max: 3 * BODY_LIMIT_BYTES })
      .map((size) => edit(draft, 'raw:oversized', { text: JSON.stringify({ filler: 'z'.repeat(size) }) })),
  ];
  if (firstKey !== undefined && text.startsWith('{')) {
    options.push(
      fc.jsonValue({ maxDepth: 1 }).map((value) =>
        edit(draft, 'raw:duplicate-key', {
          text: `{${JSON.stringify(firstKey)}:${JSON.stringify(value)},${text.slice(1)}`,
        }),
      ),
    );
  }
  return fc.oneof(...options);
}

/**
 * encodeURIComponent, except that a lone surrogate (which it refuses) goes out as its WTF-8 bytes:
 * an invalid UTF-8 sequence, one more thing for the server's decoder to survive.
 */
function percentEncode(value: string): string {
  let result = '';
  for (const char of value) {
    const code = char.codePointAt(0) as number;
    if (code >= 0xd800 && code <= 0xdfff) {
      result +=
        `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`.toUpperCase();
    } else {
      result += encodeURIComponent(char);
    }
  }
  return result;
}

/** Percent-encodings that decoders choke on, and an encoded traversal (fetch resolves plain dot segments itself). */
const hostileSegments = fc.constantFrom(
  '%',
  '%zz',
  '%E0%A4%A',
  '%C0%AF',
  '%00',
  '%2F',
  '..%2F..%2Fetc%2Fpasswd',
);

function badPathParameter(draft: Draft, world: World): fc.Arbitrary<Draft> {
  const names = Object.keys(draft.path);
  const everyPoolValue = [...world.pools.values()].flat().map(String);
  return fc.constantFrom(...names).chain((name) => {
    const current = draft.path[name];
    const encoded: fc.Arbitrary<string>[] = [
      awkwardString.map(percentEncode),
      fc.integer({ min: 100, max: 4000 }).map((length) => 'a'.repeat(length)),
      fc.constantFrom(...everyPoolValue).map(percentEncode),
      fc.constant(''),
      hostileSegments,
    ];
    if (ADDRESS.test(current)) encoded.push(fc.nat().map((at) => flipChecksum(current, at)));
    return fc
      .oneof(...encoded)
      .map((value) => edit(draft, 'path:bad-id', { path: { ...draft.path, [name]: value } }));
  });
}

const oddQueryValues = fc.oneof(
  awkwardString,
  fc.constantFrom(
    '-1',
    '0',
    '1.5',
    '1e400',
    '99999999999999999999999',
    'NaN',
    'true',
    'null',
    '',
    '[]',
    '{}',
  ),
  fc.integer({ min: 1000, max: 9000 }).map((length) => 'q'.repeat(length)),
);

function badQuery(draft: Draft): fc.Arbitrary<Draft> {
  const declared = draft.op.parameters.filter((p) => p.in === 'query').map((p) => p.name);
  const options: fc.Arbitrary<Draft>[] = [
    fc
      .tuple(fc.string({ minLength: 1, maxLength: 12 }), oddQueryValues)
      .map(([name, value]) => edit(draft, 'query:unknown', { query: [...draft.query, [name, value]] })),
  ];
  if (declared.length > 0) {
    options.push(
      fc.tuple(fc.constantFrom(...declared), oddQueryValues).map(([name, value]) =>
        edit(draft, 'query:bad-value', {
          query: [...draft.query.filter(([n]) => n !== name), [name, value]],
        }),
      ),
      fc
        .tuple(fc.constantFrom(...declared), fc.string({ maxLength: 8 }))
        .map(([name, value]) =>
          edit(draft, 'query:repeated', { query: [...draft.query, [name, value], [name, value]] }),
        ),
    );
  }
  return fc.oneof(...options);
}

/** Header values fetch can send: printable ASCII and bytes 0x80-0xFF (no DEL or other controls). */
const latin1 = fc.string({
  unit: fc
    .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }))
    .map((c) => String.fromCharCode(c)),
  maxLength: 40,
});

function badHeaders(draft: Draft): fc.Arbitrary<Draft> {
  const options: fc.Arbitrary<Draft>[] = [
    fc
      .constantFrom('text/html', 'application/xml', '*/*;q=0', 'application/problem+json')
      .map((accept) => edit(draft, 'header:accept', { headers: { ...draft.headers, accept } })),
  ];
  if (draft.op.parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key')) {
    options.push(
      fc
        .oneof(
          latin1,
          fc.integer({ min: 256, max: 2000 }).map((length) => 'k'.repeat(length)),
        )
        .map((key) =>
          edit(draft, 'header:idempotency-key', { headers: { ...draft.headers, 'idempotency-key': key } }),
        ),
    );
  }
  return fc.oneof(...options);
}

function undeclaredMethod(draft: Draft): fc.Arbitrary<Draft> | undefined {
  const declared = declaredMethods(draft.op.template);
  const others = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => !declared.includes(method));
  if (others.length === 0) return undefined;
  return fc
    .constantFrom(...others)
    .map((method) =>
      edit(draft, 'method:undeclared', { method, body: method === 'GET' ? undefined : draft.body }),
    );
}

function mutated(draft: Draft, world: World): fc.Arbitrary<Draft> {
  const choices: fc.WeightedArbitrary<Draft>[] = [
    { weight: 4, arbitrary: fc.constant(draft) },
    { weight: draft.op.credentials === 'none' ? 0 : 1, arbitrary: badCredentials(draft, world) },
    { weight: 1, arbitrary: badQuery(draft) },
    { weight: 1, arbitrary: badHeaders(draft) },
  ];
  if (draft.body !== undefined) choices.push({ weight: 3, arbitrary: damagedBody(draft) });
  if (draft.op.body) choices.push({ weight: 1, arbitrary: malformedBody(draft) });
  if (Object.keys(draft.path).length > 0)
    choices.push({ weight: 1, arbitrary: badPathParameter(draft, world) });
  const method = undeclaredMethod(draft);
  if (method) choices.push({ weight: 1, arbitrary: method });
  return fc.oneof(...choices.filter((choice) => choice.weight > 0));
}

function toRequest(draft: Draft): FuzzRequest {
  let path = draft.op.template;
  for (const [name, value] of Object.entries(draft.path)) path = path.replace(`{${name}}`, value);
  const search = new URLSearchParams(draft.query).toString();
  const headers = { ...draft.headers };
  let body: string | Uint8Array | undefined = draft.text;
  const mediaType = draft.op.body?.mediaType ?? 'application/json';
  if (body === undefined && draft.body !== undefined && draft.method !== 'GET') {
    if (mediaType === 'application/x-www-form-urlencoded' && typeof draft.body === 'object' && draft.body) {
      body = new URLSearchParams(
        Object.entries(draft.body).map(([key, value]): [string, string] => [
          key,
          typeof value === 'string' ? value : JSON.stringify(value),
        ]),
      ).toString();
    } else {
      body = JSON.stringify(draft.body);
      if (draft.raw !== undefined) body = body.replace(JSON.stringify(RAW_PLACEHOLDER), draft.raw);
    }
  }
  if (body !== undefined && draft.method !== 'GET') {
    if (draft.contentType === undefined) headers['content-type'] = mediaType;
    else if (draft.contentType !== null) headers['content-type'] = draft.contentType;
  } else {
    body = undefined;
  }
  return {
    operationId: draft.op.operationId,
    mutation: draft.mutation,
    method: draft.method,
    url: search ? `${path}?${search}` : path,
    headers,
    body,
    oauth: draft.op.oauth,
  };
}

/** Requests for `op`: valid about a third of the time, else mutated. */
export function requestArbitrary(op: Operation, world: World): fc.Arbitrary<FuzzRequest> {
  return validDraft(op, world)
    .map((draft) => ({ ...draft, path: encodePath(draft.path) }))
    .chain((draft) => mutated(draft, world))
    .map(toRequest);
}

function encodePath(path: Record<string, string>): Record<string, string> {
  // Keep `:` readable (DIDs), as clients do; encode what a path segment cannot hold.
  return Object.fromEntries(
    Object.entries(path).map(([name, value]) => [name, percentEncode(value).replaceAll('%3A', ':')]),
  );
}

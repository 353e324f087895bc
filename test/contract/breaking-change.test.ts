// The breaking-change gate (`npm run lint`, scripts/contracts/lib/compatibility.ts) on copies of the
// released contracts in a temporary folder: it must catch a removed response field and a newly
// required request field, in the REST and the WebSocket contract, pass an additive change, and let
// a breaking change through only with a version move that semver allows. The REST copies keep the
// two operations the changes touch (and what they reference): Optic takes about 10 s of CPU on the
// whole document, 2 s on these.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  changedOperationsOnly,
  checkCompatibility,
  checkDocument,
  keepReleases,
  releasedRoot,
  releasedVersions,
  withoutAddedResponseEnumValues,
} from '../../scripts/contracts/lib/compatibility.ts';

type Json = Record<string, any>;
const generatedDir = fileURLToPath(new URL('../../generated', import.meta.url));
/** Each check runs Optic; the checks run side by side on a small, shared machine. */
const GATE_TIMEOUT = 120_000;
const KEPT_PATHS = ['/api/v1/price/{id}', '/api/v1/transfer'];

const readJson = async (path: string): Promise<Json> => JSON.parse(await readFile(path, 'utf8')) as Json;

/** The document with only `paths` and the components they reach. */
function prune(doc: Json, paths: string[]): Json {
  const kept: Json = {
    ...doc,
    paths: Object.fromEntries(paths.map((p) => [p, doc.paths[p]])),
    components: {},
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (typeof node === 'object' && node !== null) {
      const ref = (node as Json).$ref;
      if (typeof ref === 'string' && ref.startsWith('#/components/')) {
        const [section, name] = ref.slice('#/components/'.length).split('/');
        kept.components[section] ??= {};
        if (!(name in kept.components[section])) {
          kept.components[section][name] = doc.components[section][name];
          visit(doc.components[section][name]);
        }
      }
      for (const value of Object.values(node)) visit(value);
    }
  };
  // Everything else at the root (security, OpenAPI 3.1 `webhooks`, ...) keeps what it references.
  for (const [key, value] of Object.entries(kept)) if (key !== 'components') visit(value);
  kept.components.securitySchemes = doc.components.securitySchemes;
  return kept;
}

let root = '';
let openapi: Json;
let asyncapi: Json;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'released-'));
  for (const version of await releasedVersions(releasedRoot, 'openapi')) {
    await mkdir(join(root, version), { recursive: true });
    const released = await readJson(join(releasedRoot, version, 'openapi.json'));
    await writeFile(join(root, version, 'openapi.json'), JSON.stringify(prune(released, KEPT_PATHS)));
  }
  for (const version of await releasedVersions(releasedRoot, 'asyncapi')) {
    await mkdir(join(root, version), { recursive: true });
    await cp(join(releasedRoot, version, 'asyncapi.json'), join(root, version, 'asyncapi.json'));
  }
  openapi = prune(await readJson(join(generatedDir, 'openapi', 'openapi.json')), KEPT_PATHS);
  asyncapi = await readJson(join(generatedDir, 'asyncapi', 'asyncapi.json'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A REST contract without Price.source (a response field) and with a required TransferRequest.memo. */
function breakingOpenApi(): Json {
  const changed = structuredClone(openapi);
  const price = changed.components.schemas.Price;
  delete price.properties.source;
  price.required = price.required.filter((name: string) => name !== 'source');
  const transfer = changed.components.schemas.TransferRequest;
  transfer.properties.memo = { type: 'string', maxLength: 140 };
  transfer.required = [...transfer.required, 'memo'];
  return changed;
}

describe('breaking-change gate', () => {
  it('lets a new enum value in a response through (docs/versioning.md), not a removed one', () => {
    const added =
      "x [request and response property enums] cannot add enum options 'a, b' from 'eventType' property. This is a breaking change.";
    const removed =
      "x [request and response property enums] cannot remove enum option 'c' from 'kind' property. This is a breaking change.";
    const other =
      'x [response property removed] cannot remove response property id. This is a breaking change.';
    expect(withoutAddedResponseEnumValues(['x GET /a:', added, 'x POST /b:', added])).toEqual([]);
    expect(withoutAddedResponseEnumValues(['x GET /a:', added, removed, 'x POST /b:', other])).toEqual([
      'x GET /a:',
      removed,
      'x POST /b:',
      other,
    ]);
  });

  it('gives Optic only the operations that can hold a breaking change, with what they reference', () => {
    const base: Json = {
      openapi: '3.1.0',
      paths: {
        '/same': {
          get: {
            description: 'old words',
            'x-roles': ['a'],
            responses: { 200: { $ref: '#/components/responses/Same' } },
          },
        },
        '/deep': { get: { responses: { 200: { $ref: '#/components/responses/Deep' } } } },
        '/named': { get: { responses: { 200: { $ref: '#/components/responses/Named' } } } },
        '/gone': { delete: { responses: { 204: { description: 'gone' } } } },
      },
      components: {
        responses: {
          Same: { description: 'a', content: { 'application/json': { schema: { type: 'string' } } } },
          Deep: {
            description: 'b',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } },
          },
          Named: {
            description: 'c',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Named' } } },
          },
        },
        schemas: {
          Thing: { type: 'object', properties: { id: { type: 'string' }, size: { type: 'integer' } } },
          Named: { type: 'object', properties: { description: { type: 'string' } } },
          Unused: { type: 'string' },
        },
      },
    };
    const head = structuredClone(base);
    // Prose, examples and extensions only: nothing for Optic to judge.
    head.paths['/same'].get.description = 'new words';
    head.paths['/same'].get['x-roles'] = ['a', 'b'];
    head.components.responses.Same.content['application/json'].example = 'x';
    // A change two references away, a removed property called `description`, a removed operation.
    delete head.components.schemas.Thing.properties.size;
    delete head.components.schemas.Named.properties.description;
    delete head.paths['/gone'];
    head.paths['/added'] = { get: { responses: { 204: { description: 'new' } } } };
    const [keptBase, keptHead] = changedOperationsOnly(base, head) as [Json, Json];
    expect(Object.keys(keptBase.paths)).toEqual(['/deep', '/named', '/gone']);
    expect(Object.keys(keptHead.paths)).toEqual(['/deep', '/named']);
    expect(Object.keys(keptHead.components.schemas)).toEqual(['Thing', 'Named']);
    expect(keptHead.components.schemas.Thing).toEqual(head.components.schemas.Thing);
  });

  it(
    'keeps a release for the current versions of both documents',
    async () => {
      expect(await releasedVersions(releasedRoot, 'openapi')).toContain(openapi.info.version);
      expect(await releasedVersions(releasedRoot, 'asyncapi')).toContain(asyncapi.info.version);
    },
    GATE_TIMEOUT,
  );

  it.concurrent(
    'fails on a removed response field and a newly required request field (OpenAPI)',
    async () => {
      const { ok, report } = await checkCompatibility({ openapi: breakingOpenApi() }, root);
      expect(ok).toBe(false);
      const text = report.join('\n');
      expect(text).toMatch(/FAIL openapi against released/);
      expect(text).toMatch(/cannot remove response property 'source'/);
      expect(text).toMatch(/required request property 'memo'|'memo'.*required/);
    },
    GATE_TIMEOUT,
  );

  it.concurrent(
    'fails on a field removed from an event and one newly required in subscribe (AsyncAPI)',
    async () => {
      const changed = structuredClone(asyncapi);
      delete changed.components.schemas.Price.properties.source;
      const price = changed.components.schemas.Price;
      price.required = price.required.filter((name: string) => name !== 'source');
      const subscribe = changed.components.schemas.SubscribeMessage;
      subscribe.required = [...new Set([...(subscribe.required ?? []), 'assetId'])];
      const { findings, problems } = await checkDocument('asyncapi', changed, root);
      expect(problems).toEqual([]);
      const breaking = findings.flatMap((f) => f.breaking ?? []).join('\n');
      expect(findings.every((f) => !f.allowed)).toBe(true);
      expect(breaking).toMatch(/cannot remove response property 'source'/);
      expect(breaking).toMatch(/POST \/events\/subscribe:\n.*cannot make a request property required/);
    },
    GATE_TIMEOUT,
  );

  it.concurrent(
    'passes an additive change: a new response field and a new optional request field',
    async () => {
      const changed = structuredClone(openapi);
      changed.components.schemas.Price.properties.volume = { type: 'string' };
      changed.components.schemas.TransferRequest.properties.memo = { type: 'string', maxLength: 140 };
      const { findings, problems } = await checkDocument('openapi', changed, root);
      expect(problems).toEqual([]);
      // Nothing breaking against the release of its own version; against an earlier release (after a
      // version move), only what that move allowed.
      expect(findings.find((f) => f.against === openapi.info.version)?.breaking).toEqual([]);
      expect(findings.every((f) => f.allowed || f.breaking?.length === 0)).toBe(true);
    },
    GATE_TIMEOUT,
  );

  it.concurrent(
    'lets the breaking change through with a minor move of a 0.x version, not a patch',
    async () => {
      const scratch = await mkdtemp(join(tmpdir(), 'released-move-'));
      try {
        await cp(root, scratch, { recursive: true });
        const [major, minor] = String(openapi.info.version).split('.').map(Number);
        const moved = breakingOpenApi();
        moved.info.version = `${major}.${minor + 1}.0`;
        // What `npm run gen` does after a version move: keep the new version's documents.
        const generated = join(scratch, 'generated');
        await mkdir(join(generated, 'openapi'), { recursive: true });
        await mkdir(join(generated, 'asyncapi'), { recursive: true });
        await writeFile(join(generated, 'openapi', 'openapi.json'), JSON.stringify(moved));
        await writeFile(join(generated, 'asyncapi', 'asyncapi.json'), JSON.stringify(asyncapi));
        expect(await keepReleases(generated, scratch)).toEqual([
          `contracts/released/${moved.info.version}/openapi.json`,
        ]);
        const minorMove = await checkDocument('openapi', moved, scratch);
        expect(minorMove.problems).toEqual([]);
        // The earlier release is not compared (the minor move allows what it would find); the new
        // version's own release is, and finds nothing.
        expect(minorMove.findings.map((f) => [f.against, f.allowed, f.breaking])).toEqual([
          [openapi.info.version, true, null],
          [moved.info.version, false, []],
        ]);
        const patch = structuredClone(moved);
        patch.info.version = `${major}.${minor}.9`;
        const patchMove = await checkDocument('openapi', patch, scratch);
        expect(patchMove.problems[0]).toMatch(/released\/.*\.9\/openapi\.json is missing/);
        expect(patchMove.findings.map((f) => [f.allowed, (f.breaking?.length ?? 0) > 0])).toEqual([
          [false, true],
        ]);
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
    GATE_TIMEOUT,
  );
});

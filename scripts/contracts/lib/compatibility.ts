/**
 * The breaking-change gate (docs/versioning.md): compares the bundled contracts with the released
 * ones kept under contracts/released/<version>/ and fails on a breaking change unless the version
 * moved as semver requires (the major, or the minor of a 0.x version).
 *
 * - OpenAPI: Optic (`optic diff <released> <current> --check`, its breaking-change rules: a removed
 *   operation, response property or enum value, a new required request property or parameter, a
 *   changed type, ...).
 * - AsyncAPI: @asyncapi/diff for the document's structure (channels, operations, messages, servers,
 *   security), and Optic again for the message payloads, seen as an OpenAPI document in which each
 *   message the service receives is a request body and each message it sends a response body, so
 *   that Optic's direction-aware rules apply to them (a field removed from an event breaks
 *   clients; a field newly required in `subscribe` breaks them too).
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diff as asyncApiDiff } from '@asyncapi/diff';
import { repoRoot } from '../../gen/paths.ts';
import { runNode } from '../../gen/run-node.ts';

type Json = Record<string, unknown>;
export type DocumentKind = 'openapi' | 'asyncapi';

export const releasedRoot = join(repoRoot, 'contracts', 'released');
const opticCli = join(repoRoot, 'node_modules', '@useoptic', 'optic', 'build', 'index.js');

export interface Finding {
  kind: DocumentKind;
  /** The released version compared with. */
  against: string;
  /** Whether the version moved enough for a breaking change. */
  allowed: boolean;
  /**
   * The breaking changes found; null when not compared: the version move allows any change, so the
   * comparison (an Optic run of ~25 s CPU) could not change the verdict.
   */
  breaking: string[] | null;
}

const parseVersion = (version: string): number[] => version.split(/[.+-]/, 3).map(Number);

function compareVersions(a: string, b: string): number {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** Whether going from `from` to `to` may break clients under semver (0.x: the minor counts). */
export function allowsBreaking(from: string, to: string): boolean {
  const [a, b] = [parseVersion(from), parseVersion(to)];
  return b[0] > a[0] || (a[0] === 0 && b[0] === 0 && b[1] > a[1]);
}

/** The released versions holding a `kind` document, ascending. */
export async function releasedVersions(root: string, kind: DocumentKind): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  const versions: string[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const has = await readFile(join(root, entry.name, `${kind}.json`)).then(
      () => true,
      () => false,
    );
    if (has) versions.push(entry.name);
  }
  return versions.sort(compareVersions);
}

/** Optic's breaking changes between two OpenAPI documents (files), as lines of its report. */
async function opticBreaking(base: string, head: string, workDir: string): Promise<string[]> {
  const { code, output } = await runNode(opticCli, ['diff', base, head, '--check', '--severity', 'error'], {
    cwd: workDir,
    env: { OPTIC_TELEMETRY_LEVEL: 'none', NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  if (code === 0) return [];
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^x \[|^x [A-Z]+ \//.test(line));
  if (lines.length === 0) return [output.trim()];
  return withoutAddedResponseEnumValues(lines);
}

// docs/versioning.md lets a release add an enum value in a response (clients must ignore values they
// do not know); Optic's ruleset reports it ("cannot add enum option(s) ... from ... property"; a
// removed one reads "cannot remove"). Those findings are dropped, and an operation left without any.
const ADDED_RESPONSE_ENUM = /^x \[request and response property enums\] cannot add enum options? /;

/** Optic's report lines (operation headers, each followed by its findings) without added response enum values. */
export function withoutAddedResponseEnumValues(lines: string[]): string[] {
  const kept: string[] = [];
  let header: string | null = null;
  for (const line of lines) {
    if (/^x [A-Z]+ \//.test(line)) header = line;
    else if (!ADDED_RESPONSE_ENUM.test(line)) {
      if (header !== null) kept.push(header);
      header = null;
      kept.push(line);
    }
  }
  return kept;
}

/**
 * The message payloads of an AsyncAPI document as an OpenAPI document: `POST /<channel>/<message>`
 * with the payload as its request body for a message the service receives, `GET` with the payload
 * as the 200 response for one it sends. Components keep their pointers (`#/components/schemas/...`).
 */
export function payloadsAsOpenApi(asyncapi: Json): Json {
  const channels = (asyncapi.channels ?? {}) as Record<string, Json>;
  const received = new Set<string>();
  for (const operation of Object.values((asyncapi.operations ?? {}) as Record<string, Json>)) {
    if (operation.action !== 'receive') continue;
    for (const message of (operation.messages ?? []) as Json[]) received.add(String(message.$ref));
  }
  const paths: Record<string, Json> = {};
  for (const [channelName, channel] of Object.entries(channels)) {
    for (const [messageName, message] of Object.entries((channel.messages ?? {}) as Record<string, Json>)) {
      const content = { 'application/json': { schema: message.payload ?? {} } };
      const pointer = `#/channels/${channelName}/messages/${messageName}`;
      paths[`/${channelName}/${messageName}`] = received.has(pointer)
        ? { post: { requestBody: { required: true, content }, responses: { '204': { description: 'ok' } } } }
        : { get: { responses: { '200': { description: 'sent by the service', content } } } };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: `${String((asyncapi.info as Json).title)} (message payloads)`, version: '0' },
    paths,
    components: { schemas: ((asyncapi.components ?? {}) as Json).schemas ?? {} },
  };
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Keys whose object's keys are names (of properties, responses, ...), not keywords. */
const NAME_MAPS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'responses',
  'schemas',
  'headers',
  'parameters',
  'securitySchemes',
  'content',
  'paths',
  'webhooks',
  'callbacks',
  'links',
  'mapping',
]);

/**
 * A node without what no breaking-change rule reads: prose (`description`, `summary`), examples and
 * vendor extensions other than Optic's own (`x-optic-*`). Keys that are names (a property called
 * `description`) are kept.
 */
function withoutProse(node: unknown, keysAreNames = false): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutProse(item));
  if (typeof node !== 'object' || node === null) return node;
  const kept: Json = {};
  for (const [key, value] of Object.entries(node)) {
    const prose =
      ['description', 'summary', 'example', 'examples'].includes(key) ||
      (key.startsWith('x-') && !key.startsWith('x-optic'));
    if (!keysAreNames && prose) continue;
    kept[key] = withoutProse(value, !keysAreNames && NAME_MAPS.has(key));
  }
  return kept;
}

const pointed = (doc: Json, ref: string): unknown =>
  ref
    .slice(2)
    .split('/')
    .reduce<unknown>(
      (node, token) => (node as Json | undefined)?.[token.replaceAll('~1', '/').replaceAll('~0', '~')],
      doc,
    );

/** `node` with prose removed, and every component it reaches (transitively), as one comparable text. */
function operationKey(doc: Json, node: unknown): string {
  const reached = new Map<string, unknown>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (typeof value === 'object' && value !== null) {
      const ref = (value as Json).$ref;
      if (typeof ref === 'string' && ref.startsWith('#/') && !reached.has(ref)) {
        const target = pointed(doc, ref);
        reached.set(ref, withoutProse(target));
        visit(target);
      }
      for (const child of Object.values(value)) visit(child);
    }
  };
  visit(node);
  return JSON.stringify([withoutProse(node), [...reached].sort(([a], [b]) => a.localeCompare(b))]);
}

/**
 * Both documents with only the operations that can hold a breaking change: those in `base` that
 * `head` lacks or holds differently. An operation that only `head` has (added) breaks nothing;
 * one equal in both, with everything it references, apart from prose, examples and vendor
 * extensions, gives Optic no change to judge. The components the remaining document no longer
 * references go too. Optic's time grows with what it reads (~30 s of CPU for the whole REST
 * contract).
 */
export function changedOperationsOnly(base: Json, head: Json): [Json, Json] {
  const basePaths = (base.paths ?? {}) as Record<string, Json>;
  const headPaths = (head.paths ?? {}) as Record<string, Json>;
  const keptBase: Record<string, Json> = {};
  const keptHead: Record<string, Json> = {};
  for (const [path, baseItem] of Object.entries(basePaths)) {
    const headItem = headPaths[path];
    for (const method of HTTP_METHODS) {
      if (baseItem[method] === undefined) continue;
      const headOperation = headItem?.[method];
      const same =
        headOperation !== undefined &&
        operationKey(base, [baseItem[method], baseItem.parameters ?? []]) ===
          operationKey(head, [headOperation, headItem.parameters ?? []]);
      if (same) continue;
      keptBase[path] ??= Object.fromEntries(
        Object.entries(baseItem).filter(([k]) => !HTTP_METHODS.includes(k)),
      );
      keptBase[path][method] = baseItem[method];
      if (headOperation !== undefined) {
        keptHead[path] ??= Object.fromEntries(
          Object.entries(headItem).filter(([k]) => !HTTP_METHODS.includes(k)),
        );
        keptHead[path][method] = headOperation;
      }
    }
  }
  return [
    reachableComponentsOnly({ ...base, paths: keptBase }),
    reachableComponentsOnly({ ...head, paths: keptHead }),
  ];
}

/** The document with only the components that the rest of it references (directly or not). */
function reachableComponentsOnly(doc: Json): Json {
  const components = (doc.components ?? {}) as Record<string, Json>;
  const kept: Record<string, Json> = {};
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (typeof node === 'object' && node !== null) {
      const ref = (node as Json).$ref;
      if (typeof ref === 'string' && ref.startsWith('#/components/')) {
        const [section, name] = ref
          .slice('#/components/'.length)
          .split('/')
          .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
        kept[section] ??= {};
        if (!(name in kept[section]) && components[section]?.[name] !== undefined) {
          kept[section][name] = components[section][name];
          visit(components[section][name]);
        }
      }
      for (const value of Object.values(node)) visit(value);
    }
  };
  for (const [key, value] of Object.entries(doc)) if (key !== 'components') visit(value);
  // Security schemes are named by security requirements, not referenced.
  if (components.securitySchemes) kept.securitySchemes = components.securitySchemes;
  return { ...doc, components: kept };
}

async function breakingOpenApi(fullBase: Json, fullHead: Json): Promise<string[]> {
  const [base, head] = changedOperationsOnly(fullBase, fullHead);
  const workDir = await mkdtemp(join(tmpdir(), 'contract-gate-'));
  try {
    const [basePath, headPath] = [join(workDir, 'base.json'), join(workDir, 'head.json')];
    await writeFile(basePath, JSON.stringify(base));
    await writeFile(headPath, JSON.stringify(head));
    return await opticBreaking(basePath, headPath, workDir);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

async function breakingAsyncApi(base: Json, head: Json): Promise<string[]> {
  // With the default (JSON) output format, breaking() is the list of changes.
  const changes = asyncApiDiff(base, head, {}).breaking() as { action: string; path: string }[];
  const structure = changes.map((change) => `${change.action} ${change.path}`);
  const payloads = await breakingOpenApi(payloadsAsOpenApi(base), payloadsAsOpenApi(head));
  return [...structure, ...payloads];
}

/**
 * Compares the current `kind` document with the release of its own version (no breaking change
 * allowed) and with the latest earlier release (allowed only if the version moved enough).
 */
export async function checkDocument(
  kind: DocumentKind,
  current: Json,
  root: string = releasedRoot,
): Promise<{ findings: Finding[]; problems: string[] }> {
  const version = String((current.info as Json).version);
  const versions = await releasedVersions(root, kind);
  const same = versions.find((v) => v === version);
  const previous = versions.filter((v) => compareVersions(v, version) < 0).at(-1);
  const problems: string[] = [];
  if (same === undefined)
    problems.push(
      `${kind} ${version}: contracts/released/${version}/${kind}.json is missing (npm run gen writes it)`,
    );
  const newer = versions.filter((v) => compareVersions(v, version) > 0);
  if (newer.length > 0) problems.push(`${kind} ${version} is older than the released ${newer.join(', ')}`);
  const compare = async (against: string): Promise<Finding> => {
    const allowed = allowsBreaking(against, version);
    if (allowed) return { kind, against, allowed, breaking: null };
    const released = JSON.parse(await readFile(join(root, against, `${kind}.json`), 'utf8')) as Json;
    const breaking =
      kind === 'openapi'
        ? await breakingOpenApi(released, current)
        : await breakingAsyncApi(released, current);
    return { kind, against, allowed, breaking };
  };
  const baselines = [previous, same].filter((v): v is string => v !== undefined);
  const findings = await Promise.all(baselines.map(compare));
  return { findings, problems };
}

/** The gate's verdict on both documents: the lines to print, and whether it passes. */
export async function checkCompatibility(
  documents: Partial<Record<DocumentKind, Json>>,
  root: string = releasedRoot,
): Promise<{ ok: boolean; report: string[] }> {
  const results = await Promise.all(
    Object.entries(documents).map(([kind, doc]) => checkDocument(kind as DocumentKind, doc, root)),
  );
  const report: string[] = [];
  let ok = true;
  for (const { findings, problems } of results) {
    for (const problem of problems) report.push(`FAIL ${problem}`);
    ok &&= problems.length === 0;
    for (const finding of findings) {
      const head = `${finding.kind} against released ${finding.against}`;
      if (finding.breaking === null)
        report.push(`ok   ${head}: not compared, the version move allows breaking changes`);
      else if (finding.breaking.length === 0) report.push(`ok   ${head}: no breaking change`);
      else {
        ok = false;
        report.push(
          `FAIL ${head}: breaking change(s) within the same compatible version (move info.version, docs/versioning.md):`,
          ...finding.breaking.map((line) => `       ${line}`),
        );
      }
    }
  }
  return { ok, report };
}

/**
 * Keeps the bundled documents of a version that has no release yet under
 * contracts/released/<version>/ (`npm run gen` calls this after a version move). A kept release is
 * never rewritten: later changes under the same version are checked against it.
 */
export async function keepReleases(generated: string, root: string = releasedRoot): Promise<string[]> {
  const kept: string[] = [];
  for (const kind of ['openapi', 'asyncapi'] as const) {
    const text = await readFile(join(generated, kind, `${kind}.json`), 'utf8');
    const version = String(((JSON.parse(text) as Json).info as Json).version);
    const target = join(root, version, `${kind}.json`);
    const exists = await readFile(target).then(
      () => true,
      () => false,
    );
    if (exists) continue;
    await mkdir(join(root, version), { recursive: true });
    await writeFile(target, text);
    kept.push(`contracts/released/${version}/${kind}.json`);
  }
  return kept;
}

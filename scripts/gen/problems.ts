/**
 * The problem-type registry (contracts/problems.yaml) in the bundled documents: the registry at the
 * root of both (`x-problem-types`), and on every operation the complete list of types it can send
 * (the general types of every status it declares, plus the ones the operation names). Fails the
 * generation when an operation or channel names a type the registry lacks, or a type whose status
 * it does not declare, so the documents and the registry cannot drift apart.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from './paths.ts';

export const problemsFile = join(repoRoot, 'contracts', 'problems.yaml');

export interface ProblemType {
  type: string;
  title: string;
  status: number;
  when: string;
  retryable: boolean;
  general: boolean;
}

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export function loadProblemTypes(file = problemsFile): ProblemType[] {
  const raw = parse(readFileSync(file, 'utf8')) as unknown;
  if (!isObject(raw)) throw new Error(`${file}: expected a map of problem types`);
  const out: ProblemType[] = [];
  for (const [type, entry] of Object.entries(raw)) {
    const where = `${file}: ${type}`;
    if (!/^\/problems\/[a-z0-9]+(-[a-z0-9]+)*$/.test(type))
      throw new Error(`${where}: a type is /problems/<kebab-case-name>`);
    if (!isObject(entry)) throw new Error(`${where}: expected an object`);
    const { title, status, when, retryable, general = false, ...rest } = entry;
    if (Object.keys(rest).length > 0)
      throw new Error(`${where}: unknown keys ${Object.keys(rest).join(', ')}`);
    if (typeof title !== 'string' || title === '') throw new Error(`${where}: title is required`);
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599)
      throw new Error(`${where}: status must be a 4xx or 5xx integer`);
    if (typeof when !== 'string' || when === '') throw new Error(`${where}: when is required`);
    if (typeof retryable !== 'boolean') throw new Error(`${where}: retryable must be true or false`);
    if (typeof general !== 'boolean') throw new Error(`${where}: general must be true or false`);
    out.push({ type, title, status, when, retryable, general });
  }
  return out;
}

function byStatusThenType(a: ProblemType, b: ProblemType): number {
  return a.status - b.status || a.type.localeCompare(b.type);
}

function listedTypes(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((t) => typeof t === 'string'))
    throw new Error(`${where}: x-problem-types must be a list of type URIs`);
  return value;
}

/** Follows `#/...` references (the AsyncAPI bundler points a second use of a file at its first). */
function resolveInternal(doc: JsonObject, node: unknown): unknown {
  let current = node;
  while (isObject(current) && typeof current.$ref === 'string' && current.$ref.startsWith('#/')) {
    let target: unknown = doc;
    for (const token of current.$ref.slice(2).split('/'))
      target =
        isObject(target) || Array.isArray(target)
          ? (target as JsonObject)[token.replaceAll('~1', '/').replaceAll('~0', '~')]
          : undefined;
    current = target;
  }
  return current;
}

/** The registry as a Markdown table, by status then type (also docs/reference/problem-types.md's). */
export function problemTypesTable(registry: ProblemType[] = loadProblemTypes()): string {
  const rows = [...registry]
    .sort(byStatusThenType)
    .map(
      (p) =>
        `| ${p.status} | \`${p.type}\` | ${p.title} | ${p.when.replaceAll('|', '\\|')} | ${p.retryable ? 'yes' : 'no'} |`,
    );
  return ['| status | type | title | sent when | retry |', '|---|---|---|---|---|', ...rows].join('\n');
}

function registryTable(registry: ProblemType[]): string {
  return [
    '**Problem types.** Every type this service sends, with its status; `retry` says whether the same',
    'request, unchanged, can succeed later. Each operation lists the types it can send in',
    '`x-problem-types`; the registry is machine-readable in `x-problem-types` at the root.',
    '',
    problemTypesTable(registry),
  ].join('\n');
}

/**
 * The registry as TypeScript (generated/problems.ts): every type with its title, status and
 * whether a retry can succeed, and the `ProblemType` union the server's errors are typed with, so
 * that a type the registry lacks, or one sent with another status, fails typecheck.
 */
export function problemTypesModule(registry = loadProblemTypes()): string {
  const entries = [...registry]
    .sort(byStatusThenType)
    .map(
      (p) =>
        `  ${JSON.stringify(p.type)}: { title: ${JSON.stringify(p.title)}, status: ${p.status}, retryable: ${p.retryable} },`,
    );
  return [
    '// Generated by npm run gen from contracts/problems.yaml — do not edit.',
    '',
    '/** Every problem type (RFC 9457 `type`) this service sends, keyed by its URI (contracts/problems.yaml). */',
    'export const PROBLEM_TYPES = {',
    ...entries,
    '} as const;',
    '',
    '/** A problem type of the registry. */',
    'export type ProblemType = keyof typeof PROBLEM_TYPES;',
    '',
    '/** The problem types the registry sends with HTTP status `Status`. */',
    'export type ProblemTypeWithStatus<Status extends number> = {',
    "  [Type in ProblemType]: (typeof PROBLEM_TYPES)[Type]['status'] extends Status ? Type : never;",
    '}[ProblemType];',
    '',
  ].join('\n');
}

/** Publishes the registry in the bundled OpenAPI document and completes every operation's list. */
export function applyProblemTypesToOpenApi(doc: JsonObject, registry = loadProblemTypes()): void {
  const known = new Map(registry.map((p) => [p.type, p]));
  const responsesOf = (operation: JsonObject): string[] =>
    Object.keys(isObject(operation.responses) ? operation.responses : {});
  for (const [path, item] of Object.entries(isObject(doc.paths) ? doc.paths : {})) {
    if (!isObject(item)) continue;
    for (const method of httpMethods) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const declared = responsesOf(operation);
      const covers = (status: number): boolean =>
        declared.includes(String(status)) || declared.includes('default');
      const types = new Set<ProblemType>();
      for (const type of listedTypes(operation['x-problem-types'], where)) {
        const problem = known.get(type);
        if (!problem) throw new Error(`${where}: ${type} is not in contracts/problems.yaml`);
        if (!covers(problem.status))
          throw new Error(
            `${where}: sends ${type} (${problem.status}) but declares no ${problem.status} response`,
          );
        types.add(problem);
      }
      for (const problem of registry) if (problem.general && covers(problem.status)) types.add(problem);
      if (types.size > 0) operation['x-problem-types'] = [...types].sort(byStatusThenType).map((p) => p.type);
    }
  }
  const info = isObject(doc.info) ? doc.info : {};
  info.description = `${typeof info.description === 'string' ? `${info.description}\n\n\n` : ''}${registryTable(registry)}`;
  doc['x-problem-types'] = registry;
}

/** Publishes the registry in the bundled AsyncAPI document and checks every channel's list. */
export function applyProblemTypesToAsyncApi(doc: JsonObject, registry = loadProblemTypes()): void {
  const known = new Set(registry.map((p) => p.type));
  for (const [name, channel] of Object.entries(isObject(doc.channels) ? doc.channels : {})) {
    if (!isObject(channel)) continue;
    const types = listedTypes(resolveInternal(doc, channel['x-problem-types']), `channel ${name}`);
    for (const type of types)
      if (!known.has(type)) throw new Error(`channel ${name}: ${type} is not in contracts/problems.yaml`);
  }
  doc['x-problem-types'] = registry;
}

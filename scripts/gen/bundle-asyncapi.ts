/**
 * Bundles a multi-file AsyncAPI 3 document into one document whose `$ref`s are all internal.
 *
 * Neither Redocly nor @asyncapi/bundler keeps AsyncAPI 3's internal references (they inline
 * `#/channels/x/messages/y`, which operations must reference), so this small bundler places
 * every referenced file once and points every other reference at that place:
 * - a file referenced from the root's `components.<section>.<name>` lives there;
 * - a file inside a `schemas/` folder (the shared JSON Schemas) becomes
 *   `components.schemas.<title, else file name>`;
 * - any other file (a channel, a message) is inlined where it is first referenced.
 * References that are already internal to the root stay as written.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve, sep } from 'node:path';
import { parse } from 'yaml';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const escapeToken = (token: string): string => token.replaceAll('~', '~0').replaceAll('/', '~1');
const unescapeToken = (token: string): string => token.replaceAll('~1', '/').replaceAll('~0', '~');
const toPointer = (path: readonly string[]): string => path.map((t) => `/${escapeToken(t)}`).join('');

export class BundleError extends Error {}

export function bundleAsyncApi(rootFile: string): JsonObject {
  return new AsyncApiBundler(resolve(rootFile)).bundle();
}

class AsyncApiBundler {
  readonly #rootFile: string;
  readonly #files = new Map<string, Json>();
  /** Where each placed unit lives in the bundle: key `file#pointer` -> bundle pointer. */
  readonly #placed = new Map<string, string>();
  readonly #hoistedSchemas = new Map<string, Json>();
  readonly #schemaNameOwners = new Map<string, string>();

  constructor(rootFile: string) {
    this.#rootFile = rootFile;
  }

  bundle(): JsonObject {
    const root = this.#load(this.#rootFile);
    if (!isObject(root)) throw new BundleError(`${this.#rootFile}: not a YAML/JSON object`);
    this.#registerRootComponents(root);
    const bundled = this.#transform(root, this.#rootFile, []) as JsonObject;
    if (this.#hoistedSchemas.size > 0) {
      const components = isObject(bundled.components) ? bundled.components : {};
      const schemas = isObject(components.schemas) ? components.schemas : {};
      // Sorted so the output does not depend on the order references were met in.
      for (const name of [...this.#hoistedSchemas.keys()].sort()) {
        schemas[name] = this.#hoistedSchemas.get(name) ?? null;
      }
      components.schemas = schemas;
      bundled.components = components;
    }
    return bundled;
  }

  /** `components.<section>.<name>: { $ref: ./file.yaml }` in the root names the file's home. */
  #registerRootComponents(root: JsonObject): void {
    if (!isObject(root.components)) return;
    for (const [section, entries] of Object.entries(root.components)) {
      if (!isObject(entries)) continue;
      for (const [name, entry] of Object.entries(entries)) {
        if (!isObject(entry) || typeof entry.$ref !== 'string' || entry.$ref.startsWith('#')) continue;
        const { file, pointer } = this.#resolveRef(entry.$ref, this.#rootFile);
        this.#placed.set(`${file}#${pointer}`, `#${toPointer(['components', section, name])}`);
      }
    }
  }

  #transform(node: Json, file: string, at: string[]): Json {
    if (Array.isArray(node)) return node.map((item, i) => this.#transform(item, file, [...at, String(i)]));
    if (!isObject(node)) return node;
    if (typeof node.$ref === 'string') return this.#transformRef(node, file, at);
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      const isMapping = key === 'mapping' && at.at(-1) === 'discriminator' && isObject(value);
      out[key] = isMapping ? this.#transformMapping(value, file) : this.#transform(value, file, [...at, key]);
    }
    return out;
  }

  /** OpenAPI-style discriminator mappings hold references as plain strings. */
  #transformMapping(mapping: JsonObject, file: string): JsonObject {
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(mapping)) {
      const isRef = typeof value === 'string' && (value.startsWith('#') || /\.(ya?ml|json)(#|$)/.test(value));
      out[key] = isRef ? this.#locate(value, file) : value;
    }
    return out;
  }

  #transformRef(node: JsonObject, file: string, at: string[]): Json {
    const ref = node.$ref as string;
    const { file: target, pointer } = this.#resolveRef(ref, file);
    const here = `#${toPointer(at)}`;
    const existing = this.#findPlaced(target, pointer);
    if (target === this.#rootFile || (existing !== undefined && existing !== here)) {
      return { ...node, $ref: this.#locate(ref, file) };
    }
    if (existing === undefined && this.#isSharedSchemaFile(target)) {
      return { ...node, $ref: this.#locate(ref, file) };
    }
    // First reference to a channel, message or similar fragment (or its registered home): inline it.
    this.#placed.set(`${target}#${pointer}`, here);
    return this.#transform(this.#resolvePointer(target, pointer), target, at);
  }

  /** The bundle pointer for a reference, placing a shared schema file if it is not placed yet. */
  #locate(ref: string, file: string): string {
    const { file: target, pointer } = this.#resolveRef(ref, file);
    if (target === this.#rootFile) return `#${pointer}`;
    const existing = this.#findPlaced(target, pointer);
    if (existing !== undefined) return existing;
    if (!this.#isSharedSchemaFile(target)) {
      throw new BundleError(`${file}: cannot place ${ref}: reference it where it should live first`);
    }
    const name = this.#schemaName(target);
    this.#placed.set(`${target}#`, `#${toPointer(['components', 'schemas', name])}`);
    this.#hoistedSchemas.set(
      name,
      this.#transform(this.#load(target), target, ['components', 'schemas', name]),
    );
    return `#${toPointer(['components', 'schemas', name])}${pointer}`;
  }

  /** The placed unit of `file` that contains `pointer` (the unit itself or an ancestor). */
  #findPlaced(file: string, pointer: string): string | undefined {
    let candidate = pointer;
    for (;;) {
      const placed = this.#placed.get(`${file}#${candidate}`);
      if (placed !== undefined) return placed + pointer.slice(candidate.length);
      if (candidate === '') return undefined;
      candidate = candidate.slice(0, candidate.lastIndexOf('/'));
    }
  }

  #isSharedSchemaFile(file: string): boolean {
    return dirname(file).split(sep).includes('schemas');
  }

  #schemaName(file: string): string {
    const doc = this.#load(file);
    const title = isObject(doc) && typeof doc.title === 'string' ? doc.title : '';
    const name = /^[A-Za-z][A-Za-z0-9_.-]*$/.test(title) ? title : basename(file, extname(file));
    const owner = this.#schemaNameOwners.get(name);
    if (owner !== undefined && owner !== file) {
      throw new BundleError(`schemas ${owner} and ${file} would both be components.schemas.${name}`);
    }
    this.#schemaNameOwners.set(name, file);
    return name;
  }

  #resolveRef(ref: string, fromFile: string): { file: string; pointer: string } {
    const hash = ref.indexOf('#');
    const path = hash === -1 ? ref : ref.slice(0, hash);
    const fragment = hash === -1 ? '' : decodeURIComponent(ref.slice(hash + 1));
    if (/^[a-z][a-z0-9+.-]*:/i.test(path))
      throw new BundleError(`${fromFile}: remote $ref ${ref} is not allowed`);
    if (fragment !== '' && !fragment.startsWith('/')) throw new BundleError(`${fromFile}: bad $ref ${ref}`);
    return { file: path === '' ? fromFile : resolve(dirname(fromFile), path), pointer: fragment };
  }

  #resolvePointer(file: string, pointer: string): Json {
    let node = this.#load(file);
    for (const token of pointer.split('/').slice(1).map(unescapeToken)) {
      const next = Array.isArray(node) ? node[Number(token)] : isObject(node) ? node[token] : undefined;
      if (next === undefined) throw new BundleError(`${file}: no node at #${pointer}`);
      node = next;
    }
    return node;
  }

  #load(file: string): Json {
    let doc = this.#files.get(file);
    if (doc === undefined) {
      try {
        doc = parse(readFileSync(file, 'utf8')) as Json;
      } catch (error) {
        throw new BundleError(`cannot read ${file}: ${(error as Error).message}`);
      }
      this.#files.set(file, doc);
    }
    return doc;
  }
}

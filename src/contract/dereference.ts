// The bundled contract with its `$ref`s replaced by what they point to, as openapi-backend's router and
// request validators take it. openapi-backend's init dereferences with json-schema-ref-parser, which
// also handles remote and relative references, `$id` scopes and cycles: ~0.5 CPU-s at every start for
// a document whose references are all local (the bundle: `#/...`) and acyclic. This does the same in
// one pass; test/unit/startup-cost.test.ts checks that its result equals json-schema-ref-parser's.
//
// As json-schema-ref-parser does, a plain `{ $ref }` becomes the (shared) target; a `$ref` with other
// keywords beside it (OpenAPI 3.1 allows them, e.g. a `description` or a `not`) becomes a new object
// with those keywords and the target's others.

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null;

/** Dereferences `document` in place and returns it. Throws on a reference that is not local, or a cycle. */
export function dereferenceLocal(document: JsonObject): JsonObject {
  /** Per reference, its target once dereferenced; `pending` while it is being dereferenced. */
  const targets = new Map<string, unknown>();
  const pending = Symbol('pending');
  const done = new WeakSet<object>();

  function target(ref: string): unknown {
    const known = targets.get(ref);
    if (known === pending) throw new Error(`the contract's $ref ${ref} is circular`);
    if (known !== undefined) return known;
    if (!ref.startsWith('#/')) throw new Error(`the contract's $ref ${ref} is not local`);
    targets.set(ref, pending);
    let node: unknown = document;
    for (const token of ref.slice(2).split('/')) {
      const key = decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~');
      if (isObject(node) && typeof node.$ref === 'string') node = target(node.$ref);
      if (!isObject(node) || !Object.hasOwn(node, key))
        throw new Error(`the contract's $ref ${ref} points to nothing`);
      node = node[key];
    }
    const value = visit(node);
    targets.set(ref, value);
    return value;
  }

  function visit(node: unknown): unknown {
    if (!isObject(node) || done.has(node)) return node;
    if (typeof node.$ref === 'string') {
      const value = target(node.$ref);
      const beside = Object.keys(node).filter((key) => key !== '$ref');
      if (beside.length === 0 || !isObject(value)) return value;
      const merged: JsonObject = {};
      for (const key of beside) merged[key] = node[key];
      for (const key of Object.keys(value)) {
        if (!Object.hasOwn(merged, key)) merged[key] = value[key];
        else if (isObject(merged[key]) && isObject(value[key]))
          throw new Error(
            `the contract's $ref ${node.$ref} has an object keyword "${key}" beside it and in it`,
          );
      }
      return visit(merged);
    }
    done.add(node);
    for (const key of Object.keys(node)) node[key] = visit(node[key]);
    return node;
  }

  return visit(document) as JsonObject;
}

// Routing from the contract's operations, compiled once: an exact path with the method first; else
// the templates matching the path, most specific (longest literal part) first, the first with the
// method; none match: 404; the path matches but not the method: 405 with the methods that would.
// These are the answers openapi-backend's router gives, without its per-request work (it rebuilds the
// operation list and compiles a RegExp per operation on every request).
import type { Operation } from 'openapi-backend';

export type MatchResult =
  | { kind: 'found'; operation: Operation; params: Record<string, string> }
  | { kind: 'notFound' }
  | { kind: 'methodNotAllowed'; allowed: string[] };

interface Template {
  operation: Operation;
  /** The template with each `{name}` as a capture group of one or more characters but `/`. */
  pattern: RegExp;
  names: string[];
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

function compileTemplate(operation: Operation): Template {
  const names: string[] = [];
  const literal = operation.path
    .split(/\{([^}]+)\}/)
    .map((part, index) => {
      if (index % 2 === 1) {
        names.push(part);
        return '([^/]+)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { operation, pattern: new RegExp(`^${literal}$`), names };
}

function specificity(path: string): number {
  return path.replace(/\{.*?\}/g, '').length;
}

/** A path's first segment (`/wallets/0x.../assets` -> `wallets`). */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return end === -1 ? path.slice(1) : path.slice(1, end);
}

export class OperationMatcher {
  private readonly exact = new Map<string, Operation>();
  private readonly exactPaths = new Map<string, string[]>();
  private readonly templates: Template[];
  /**
   * The templates a path can match, by the path's first segment, in `templates`' order: those whose
   * first segment is that literal, and those whose first segment is a parameter (`rest` alone for a
   * first segment no template names literally).
   */
  private readonly byFirstSegment = new Map<string, Template[]>();
  private readonly rest: Template[];

  constructor(operations: readonly Operation[]) {
    for (const operation of operations) {
      const key = `${operation.method} ${operation.path}`;
      if (!this.exact.has(key)) this.exact.set(key, operation);
      const methods = this.exactPaths.get(operation.path) ?? [];
      methods.push(operation.method);
      this.exactPaths.set(operation.path, methods);
    }
    // A stable sort: equally specific templates keep the document's order.
    this.templates = operations
      .filter((operation) => operation.path.includes('{'))
      .map(compileTemplate)
      .sort((a, b) => specificity(b.operation.path) - specificity(a.operation.path));
    const parameterFirst = (template: Template) => firstSegment(template.operation.path).includes('{');
    this.rest = this.templates.filter(parameterFirst);
    for (const template of this.templates) {
      const segment = firstSegment(template.operation.path);
      if (!parameterFirst(template) && !this.byFirstSegment.has(segment))
        this.byFirstSegment.set(
          segment,
          this.templates.filter(
            (other) => firstSegment(other.operation.path) === segment || parameterFirst(other),
          ),
        );
    }
  }

  /**
   * `method` in lower case, `path` normalized (no query, no trailing slash). Path parameters are
   * percent-decoded (a malformed encoding throws URIError).
   */
  match(method: string, path: string): MatchResult {
    const direct = this.exact.get(`${method} ${path}`);
    if (direct) return { kind: 'found', operation: direct, params: NO_PARAMS };
    let pathMatched = this.exactPaths.has(path);
    for (const template of this.byFirstSegment.get(firstSegment(path)) ?? this.rest) {
      const groups = template.pattern.exec(path);
      if (!groups) continue;
      if (template.operation.method === method) {
        const params: Record<string, string> = {};
        for (let index = 0; index < template.names.length; index++) {
          params[template.names[index]] = decodeURIComponent(groups[index + 1]);
        }
        return { kind: 'found', operation: template.operation, params };
      }
      pathMatched = true;
    }
    return pathMatched ? { kind: 'methodNotAllowed', allowed: this.allowed(path) } : { kind: 'notFound' };
  }

  /** Every method (upper case, sorted) some operation accepts on `path`. */
  private allowed(path: string): string[] {
    const methods = new Set<string>(this.exactPaths.get(path) ?? []);
    for (const template of this.templates) {
      if (template.pattern.test(path)) methods.add(template.operation.method);
    }
    return [...methods].map((method) => method.toUpperCase()).sort();
  }
}

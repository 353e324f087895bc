// openapi-backend's router rebuilds its whole operation list (lodash, one object per operation) and
// compiles one RegExp per operation on every request, twice over (routing, then validation). The
// document never changes after init, so this builds both once and installs a matcher that gives the
// same answers: an exact path with the method first; else the templates matching the path, most
// specific (longest literal part) first, the first with the method; none match: 404; no method: 405.
//
// It also spares `handleRequest` two of its four `parseRequest` calls (each lowercases the headers,
// parses cookies and the query string and compiles the operation's path pattern): the one before
// routing, whose result only ever serves our 405 handler its `path`, and the validator's, which
// repeats the post-routing parse of the same request for the same operation.
import type { OpenAPIRouter, Operation, ParsedRequest, Request } from 'openapi-backend';

interface Template {
  operation: Operation;
  pattern: RegExp;
}

/** `/wallets/{wallet_id}/assets` -> /^\/wallets\/[^/]+\/assets$/ (as openapi-backend builds it). */
function templatePattern(path: string): RegExp {
  const literal = path
    .split(/\{[^}]+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${literal}$`);
}

function specificity(path: string): number {
  return path.replace(/\{.*?\}/g, '').length;
}

/**
 * Replaces `router.getOperations` and `router.matchOperation` with precompiled equivalents. Only for
 * the default API root (`/`), the one this service uses: every path that starts with `/` is under it.
 */
export function precompileRouter(router: OpenAPIRouter): void {
  if (router.apiRoot !== '/') throw new Error('precompileRouter supports only the API root /');
  const operations = router.getOperations();
  const exact = new Map<string, Operation>();
  for (const operation of operations) {
    const key = `${operation.method} ${operation.path}`;
    if (!exact.has(key)) exact.set(key, operation);
  }
  // A stable sort, as lodash's orderBy: equally specific templates keep the document's order.
  const templates: Template[] = operations
    .map((operation) => ({ operation, pattern: templatePattern(operation.path) }))
    .sort((a, b) => specificity(b.operation.path) - specificity(a.operation.path));

  router.getOperations = () => operations;
  const parseRequest = router.parseRequest.bind(router);
  const parsed = new WeakMap<Request, { operation: Operation; result: ParsedRequest }>();
  router.parseRequest = ((request: Request, operation?: Operation) => {
    if (!operation)
      return { ...router.normalizeRequest(request), params: {}, headers: {}, query: {}, cookies: {} };
    const earlier = parsed.get(request);
    if (earlier?.operation === operation) return earlier.result;
    const result = parseRequest(request, operation);
    parsed.set(request, { operation, result });
    return result;
  }) as OpenAPIRouter['parseRequest'];
  router.matchOperation = ((request: Request, strict?: boolean) => {
    const normalized = router.normalizeRequest(request);
    const fail = (reason: string) => {
      if (strict) throw Error(reason);
      return undefined;
    };
    if (!normalized.path.startsWith('/')) return fail('404-notFound: no route matches request');
    const path = router.normalizePath(normalized.path);
    const method = normalized.method;
    const direct = exact.get(`${method} ${path}`);
    if (direct) return direct;
    let pathMatched = false;
    for (const template of templates) {
      if (!template.pattern.test(path)) continue;
      if (template.operation.method === method) return template.operation;
      pathMatched = true;
    }
    return pathMatched
      ? fail('405-methodNotAllowed: this method is not registered for the route')
      : fail('404-notFound: no route matches request');
  }) as OpenAPIRouter['matchOperation'];
}

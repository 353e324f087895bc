// The contract's router (src/http/operation-matcher.ts) must route every request as openapi-backend's
// own router does (it replaced it on the hot path): every operation's path with its parameters filled
// in, and arbitrary paths built from the contract's segments, compared one by one.
import fc from 'fast-check';
import { OpenAPIBackend, type Operation } from 'openapi-backend';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundledOperations } from '../../../src/contract/operations.ts';
import { OperationMatcher } from '../../../src/http/operation-matcher.ts';

class Backend extends OpenAPIBackend {
  override validateDefinition() {
    return this.definition;
  }
}

let api: Backend;
let operations: Operation[];
let matcher: OperationMatcher;

beforeAll(async () => {
  api = new Backend({
    definition: structuredClone(bundledOperations().document) as never,
    validate: false,
    quick: true,
  });
  await api.init();
  operations = api.router.getOperations();
  matcher = new OperationMatcher(operations);
});

/** What openapi-backend routes `method path` to: an operationId, 405 or 404. */
function reference(method: string, path: string): string {
  const found = api.router.matchOperation({ method, path, headers: {} });
  if (found) return found.operationId as string;
  const other = ['get', 'post', 'put', 'patch', 'delete'].some((candidate) =>
    api.router.matchOperation({ method: candidate, path, headers: {} }),
  );
  return other ? '405' : '404';
}

function routed(method: string, path: string): string {
  const match = matcher.match(method, path);
  if (match.kind === 'found') return match.operation.operationId as string;
  return match.kind === 'methodNotAllowed' ? '405' : '404';
}

describe('the contract router', () => {
  it("routes every operation's path as openapi-backend does, and other methods on it", () => {
    expect(operations.length).toBeGreaterThan(50);
    for (const operation of operations) {
      const path = operation.path.replace(/\{[^}]+\}/g, 'x-1');
      for (const method of ['get', 'post', 'put', 'delete']) {
        expect(routed(method, path), `${method} ${path}`).toBe(reference(method, path));
      }
      expect(routed(operation.method, path)).toBe(operation.operationId);
    }
  });

  it('routes arbitrary paths of contract segments as openapi-backend does', () => {
    const segments = [
      ...new Set(operations.flatMap((operation) => operation.path.split('/').filter(Boolean))),
    ].map((segment) => (segment.startsWith('{') ? 'x-1' : segment));
    fc.assert(
      fc.property(
        fc.constantFrom('get', 'post', 'put', 'delete'),
        fc.array(fc.constantFrom(...segments, 'unknown', '0xab'), { minLength: 1, maxLength: 6 }),
        (method, parts) => {
          const path = `/${parts.join('/')}`;
          expect(routed(method, path), `${method} ${path}`).toBe(reference(method, path));
        },
      ),
      { numRuns: 1000 },
    );
    // CPU-bound (openapi-backend's router scans every operation): ~8 s alone, several times that on
    // a loaded machine.
  }, 120_000);
});

// Every operation of the contract is served: by a handler of the contract router, or by the
// access-control middleware (oidc-provider and its pages). None answers 501 any more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIDDLEWARE_OPERATIONS } from '../../src/auth/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

describe('operation coverage', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('has a handler for every operationId of the contract (the list of 501s is empty)', () => {
    const served = new Set<string>([...t.app.router.implemented, ...MIDDLEWARE_OPERATIONS]);
    const remaining = [...t.app.router.guards.keys()]
      .filter((operationId) => !served.has(operationId))
      .sort();
    expect(remaining).toEqual([]);
  });

  it('registers no handler for an operation the contract does not have', () => {
    const known = new Set(t.app.router.guards.keys());
    expect([...t.app.router.implemented].filter((operationId) => !known.has(operationId))).toEqual([]);
    expect(MIDDLEWARE_OPERATIONS.filter((operationId) => !known.has(operationId))).toEqual([]);
  });

  it('serves the middleware operations from oidc-provider, not as 501', async () => {
    const discovery = await t.http('GET', '/.well-known/openid-configuration');
    expect(discovery.status).toBe(200);
    const jwks = await t.http('GET', '/jwks');
    expect(jwks.status).toBe(200);
  });
});

// OWASP API9 (improper inventory management): the bundled contract is the whole surface. Every
// operation it declares is served, and nothing it does not declare answers (no debug, admin or
// older-version routes, no files outside the published directories).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIDDLEWARE_OPERATIONS } from '../../src/auth/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';

const kind = DB_KINDS[0];

describe(`inventory on ${kind}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves every operation of the contract, and only those', () => {
    const served = new Set<string>([...t.app.router.implemented, ...MIDDLEWARE_OPERATIONS]);
    const declared = [...t.app.router.guards.keys()];
    expect(declared.filter((operationId) => !served.has(operationId))).toEqual([]);
    expect([...served].filter((operationId) => !t.app.router.guards.has(operationId))).toEqual([]);
  });

  it('answers 404 to routes the contract does not declare', async () => {
    const paths = [
      '/admin',
      '/debug',
      '/api/v2/assets',
      '/api/v0/auth/login',
      '/api/v1/admin/users',
      '/.env',
      '/package.json',
      '/src/server.ts',
      '/docs/../package.json',
      '/docs/%2e%2e/package.json',
      '/explorer/..%2f..%2fpackage.json',
      '/explorer/%2e%2e/%2e%2e/data/gats.sqlite',
    ];
    for (const path of paths) {
      const response = await fetch(t.baseUrl + path);
      expect(response.status, path).toBe(404);
    }
  });

  it('publishes the contract it serves, so clients and gateways can check the inventory', async () => {
    const published = await t.http('GET', '/openapi.json');
    const operations = Object.values(
      published.body.paths as Record<string, Record<string, { operationId?: string }>>,
    )
      .flatMap((item) => Object.values(item))
      .map((operation) => operation.operationId)
      .filter(Boolean);
    expect(new Set(operations)).toEqual(new Set(t.app.router.guards.keys()));
  });
});

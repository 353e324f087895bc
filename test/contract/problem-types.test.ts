// The problem-type registry (contracts/problems.yaml): every type the code can send is registered,
// every operation and channel lists what it sends, and the response checkers (which see every
// response of the suite) refuse a type an operation or channel does not document.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import {
  assertMatchesContract,
  channelProblemTypes,
  openapiDocument,
  problemTypes,
} from '../helpers/contract.ts';
import { httpUser } from '../helpers/ledger-fixtures.ts';
import { connect } from '../helpers/ws.ts';

type Json = Record<string, any>;
const srcDir = new URL('../../src/', import.meta.url).pathname;
const asyncapi = JSON.parse(
  readFileSync(new URL('../../generated/asyncapi/asyncapi.json', import.meta.url), 'utf8'),
) as Json;

/** Every `/problems/...` literal in the service's source. */
function typesInSource(): Set<string> {
  const found = new Set<string>();
  for (const entry of readdirSync(srcDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = readFileSync(join(entry.parentPath, entry.name), 'utf8');
    for (const match of text.matchAll(/['"`](\/problems\/[a-z0-9-]+)['"`]/g)) found.add(match[1]);
  }
  return found;
}

const operations = (): [string, Json][] =>
  Object.entries(openapiDocument.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([, op]) => typeof op === 'object' && op !== null && 'responses' in op)
      .map(([method, op]) => [`${method.toUpperCase()} ${path}`, op as Json] as [string, Json]),
  );

const headers = (): Headers => new Headers({ 'x-request-id': '01JD3Z8C2B7N4Q6R8S0T2V4W6X' });

describe('16.3: one registry of problem types', () => {
  it('registers every problem type the source can send, and nothing the source never sends', () => {
    const inSource = typesInSource();
    expect([...inSource].filter((type) => !problemTypes.has(type)).sort()).toEqual([]);
    expect([...problemTypes.keys()].filter((type) => !inSource.has(type)).sort()).toEqual([]);
  });

  it('publishes the same registry in both documents, with status, title, when and retryability', () => {
    expect(asyncapi['x-problem-types']).toEqual(openapiDocument['x-problem-types']);
    for (const problem of problemTypes.values()) {
      expect(problem).toEqual({
        type: expect.stringMatching(/^\/problems\/[a-z0-9-]+$/),
        title: expect.any(String),
        status: expect.any(Number),
        when: expect.any(String),
        retryable: expect.any(Boolean),
        general: expect.any(Boolean),
      });
    }
  });

  it('lists on every operation with an error response the registered types it can send, each with a declared status', () => {
    for (const [where, op] of operations()) {
      const statuses = Object.keys(op.responses).filter((s) => Number(s) >= 400);
      const listed = (op['x-problem-types'] ?? []) as string[];
      const problemStatuses = statuses.filter((s) => {
        const response = op.responses[s].$ref
          ? (openapiDocument as Json).components.responses[op.responses[s].$ref.split('/').pop()]
          : op.responses[s];
        return response?.content && 'application/problem+json' in response.content;
      });
      if (problemStatuses.length > 0) expect(listed.length, where).toBeGreaterThan(0);
      for (const type of listed) {
        expect(problemTypes.has(type), `${where}: ${type}`).toBe(true);
        expect(statuses, `${where}: ${type}`).toContain(String(problemTypes.get(type)?.status));
      }
    }
  });

  it('documents invalid-api-key, invalid-token and invalid-ticket where they are sent', () => {
    const createTransfer = operations().find(([where]) => where === 'POST /api/v1/transfer')?.[1] as Json;
    expect(createTransfer['x-problem-types']).toEqual(
      expect.arrayContaining([
        '/problems/invalid-api-key',
        '/problems/invalid-token',
        '/problems/unauthorized',
      ]),
    );
    for (const channel of ['/ws', '/assets/subscribe']) {
      expect(channelProblemTypes(channel)).toEqual(
        expect.arrayContaining([
          '/problems/invalid-api-key',
          '/problems/invalid-token',
          '/problems/invalid-ticket',
          '/problems/too-many-connections',
        ]),
      );
    }
  });

  it('the response checker refuses a type the operation does not document, a wrong status and an unknown type', () => {
    const problem = (type: string, status: number, title: string) => ({
      status,
      contentType: 'application/problem+json',
      body: { type, title, status },
      headers: headers(),
    });
    // Registered, but not something registration can send.
    expect(() =>
      assertMatchesContract(
        'POST',
        '/api/v1/auth/register',
        problem('/problems/insufficient-balance', 409, 'Insufficient balance'),
      ),
    ).toThrow(/not documented for this operation/);
    expect(() =>
      assertMatchesContract(
        'POST',
        '/api/v1/auth/register',
        problem('/problems/username-taken', 409, 'Username taken'),
      ),
    ).not.toThrow();
    expect(() =>
      assertMatchesContract(
        'POST',
        '/api/v1/transfer',
        problem('/problems/validation-failed', 422, 'Unprocessable content'),
      ),
    ).toThrow(/registered with status 400/);
    expect(() =>
      assertMatchesContract('POST', '/api/v1/transfer', problem('/problems/made-up', 400, 'Made up')),
    ).toThrow(/not in the problem-type registry/);
  });
});

describe('16.3: the service sends only documented problem types (REST and WebSocket handshake)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('16.3: a bad API key is /problems/invalid-api-key and a bad token /problems/invalid-token, both documented', async () => {
    const user = await httpUser(t);
    // t.http checks each answer against the operation's x-problem-types.
    const badKey = await t.http('GET', '/api/v1/assets', {
      headers: { ...user.headers, 'x-api-key': 'gats_not-a-real-key-000000000000000000000000' },
    });
    expect([badKey.status, badKey.body.type]).toEqual([401, '/problems/invalid-api-key']);
    const badToken = await t.http('GET', '/api/v1/assets', {
      headers: { ...user.headers, authorization: 'Bearer eyJhbGciOiJFZERTQSJ9.e30.c2ln' },
    });
    expect([badToken.status, badToken.body.type]).toEqual([401, '/problems/invalid-token']);
  });

  it('16.3: a refused WebSocket handshake carries a documented problem (invalid-ticket, invalid-api-key)', async () => {
    const user = await httpUser(t);
    const wsUrl = t.baseUrl.replace(/^http/, 'ws');
    // connect() checks the refusal's problem against the channel's x-problem-types.
    await expect(connect(`${wsUrl}/ws?ticket=${'A'.repeat(43)}`)).rejects.toMatchObject({
      status: 401,
      problem: { type: '/problems/invalid-ticket' },
    });
    await expect(
      connect(`${wsUrl}/assets/subscribe`, { ...user.headers, 'x-api-key': 'gats_unknown' }),
    ).rejects.toMatchObject({ status: 401, problem: { type: '/problems/invalid-api-key' } });
  });
});

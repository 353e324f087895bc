// Finding 13.4: verification is CPU-bound, so it has its own body and JSON-size limits (413), and
// its JSON-LD work (expansion, compaction, canonicalization, proof check) runs on worker threads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

describe.each(DB_KINDS)('13.4: verify limits and workers over HTTP on %s', (kind) => {
  let t: TestApp;
  let alice: HttpUser;
  let credential: Record<string, any>;

  beforeAll(async () => {
    t = await startTestApp(kind, {
      VERIFY_BODY_LIMIT_BYTES: '8192',
      VERIFY_MAX_JSON_NODES: '300',
      VERIFY_WORKERS: '1',
    });
    alice = await httpUser(t);
    const did = (await t.http('POST', '/identity/create', { body: {}, headers: alice.headers })).body.did;
    const issued = await t.http('POST', '/identity/issue_credential', {
      body: { type: 'PlayerRoleCredential', subjectDid: did, formats: ['data-integrity'] },
      headers: alice.headers,
    });
    credential = issued.body.credential;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('13.4: a verify body over VERIFY_BODY_LIMIT_BYTES is a 413 problem', async () => {
    const padded = { ...credential, description: 'x'.repeat(9000) };
    const response = await t.http('POST', '/identity/verify', {
      body: { credential: padded },
      headers: alice.headers,
    });
    expect(response.status).toBe(413);
    expect(response.body.detail).toMatch(/VERIFY_BODY_LIMIT_BYTES/);
  });

  it('13.4: a credential with more JSON values than VERIFY_MAX_JSON_NODES is a 413 problem', async () => {
    const many = { ...credential, evidence: Array.from({ length: 400 }, () => 1) };
    const response = await t.http('POST', '/identity/verify', {
      body: { credential: many },
      headers: alice.headers,
    });
    expect(response.status).toBe(413);
    expect(response.body.detail).toMatch(/VERIFY_MAX_JSON_NODES/);
  });

  it('13.4: Data Integrity verification on the worker thread gives the same verdicts', async () => {
    const ok = await t.http('POST', '/identity/verify', { body: { credential }, headers: alice.headers });
    expect(ok.status).toBe(200);
    expect(ok.body.verified).toBe(true);
    const tampered = { ...credential, credentialSubject: { ...credential.credentialSubject, role: 'admin' } };
    const bad = await t.http('POST', '/identity/verify', {
      body: { credential: tampered },
      headers: alice.headers,
    });
    expect(bad.body.checks.find((check: { name: string }) => check.name === 'signature')).toMatchObject({
      passed: false,
      reason: 'signature-mismatch',
    });
    const inline = await t.http('POST', '/identity/verify', {
      body: { credential: { ...credential, '@context': [...credential['@context'], { t: '@type' }] } },
      headers: alice.headers,
    });
    expect(inline.body.checks[0]).toMatchObject({
      name: 'format',
      passed: false,
      reason: 'context-not-allowed',
    });
  });
});

// The budget is counted in memory or Redis, not in the database: one database kind is enough.
describe('13.4: verify rate cost', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp('sqlite', { RATE_LIMIT_REQUESTS: '40', VERIFY_RATE_COST: '10' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('13.4: a verification uses VERIFY_RATE_COST units of the API key budget', async () => {
    const user = await httpUser(t);
    // The key has 40 units a window: two GETs (httpUser's wallet read and this one) then three
    // verifications (10 each) leave 8.
    expect((await t.http('GET', '/api/v1/me', { headers: user.headers })).status).toBe(200);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await t.http('POST', '/identity/verify', {
        body: { jwt: 'a.b.c' },
        headers: user.headers,
      });
      expect(response.status).toBe(200);
      remaining.push(response.headers.get('ratelimit') ?? '');
    }
    expect(remaining.map((header) => /r=(\d+)/.exec(header)?.[1])).toEqual(['28', '18', '8']);
    const refused = await t.http('POST', '/identity/verify', {
      body: { jwt: 'a.b.c' },
      headers: user.headers,
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

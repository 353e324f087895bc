// Finding 13.15: a failed check says why with a stable, documented code (the contract's
// VerificationCheck `reason`), and its words are this service's, never a library's message.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantableScopes } from '../../../src/auth/scopes.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { createIdentityService, type IdentityService } from '../../../src/domain/identity/service.ts';
import { FAILURE_REASONS, type VerifyResult } from '../../../src/domain/identity/verify-checks.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  createUser,
  type LedgerFixture,
  openLedger,
  TEST_PUBLIC_URL,
} from '../../helpers/ledger-fixtures.ts';

type Json = Record<string, any>;

/** Words that only the JSON-LD, jsonld-signatures, base58 and cryptosuite libraries use. */
const LIBRARY_WORDS =
  /Invalid JSON-LD syntax|Safe mode validation|Non-base58|Did not verify any proofs|Could not load|must a string|Dropping property|loading document failed/;

function failures(result: VerifyResult) {
  return result.checks.filter((check) => !check.passed);
}

it('13.15: the reasons are exactly the contract enum', () => {
  const contract = JSON.parse(
    readFileSync(new URL('../../../generated/openapi/openapi.json', import.meta.url), 'utf8'),
  );
  expect(contract.components.schemas.VerificationCheck.properties.reason.enum).toEqual([...FAILURE_REASONS]);
});

describe.each(DB_KINDS)('13.15: verify reasons on %s', (kind) => {
  let fixture: LedgerFixture;
  let identity: IdentityService;
  let credential: Json;
  let jwt: string;

  beforeAll(async () => {
    fixture = await openLedger(kind);
    identity = await createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox('identity-test-secret-0123456789abcdef'),
      publicUrl: TEST_PUBLIC_URL,
    });
    const alice = await createUser(fixture);
    const did = (await identity.createIdentity(alice.userId)).did;
    const issued = await identity.issueCredential(alice, { type: 'PlayerRoleCredential', subjectDid: did });
    credential = issued.credential;
    jwt = issued.jwt as string;
  });

  afterAll(async () => {
    await fixture?.close();
  });

  const cases: [string, (c: Json) => Json, Record<string, string>][] = [
    [
      'a proof value that is not base58',
      (c) => ({ ...c, proof: { ...c.proof, proofValue: 'z0OIl' } }),
      { signature: 'proof-unreadable' },
    ],
    [
      'a proof whose created date is not a date',
      (c) => ({ ...c, proof: { ...c.proof, created: 'yesterday' } }),
      { signature: 'signature-mismatch' },
    ],
    [
      'an @id that is not a string',
      (c) => ({ ...c, credentialSubject: { ...c.credentialSubject, '@id': 5, id: undefined } }),
      { format: 'invalid-json-ld' },
    ],
    [
      'a term JSON-LD would drop',
      (c) => ({ ...c, '@context': ['https://www.w3.org/ns/credentials/v2'] }),
      { format: 'invalid-json-ld' },
    ],
    [
      'a verification method that cannot be resolved',
      (c) => ({ ...c, proof: { ...c.proof, verificationMethod: 'did:web:example.com#key-1' } }),
      { signature: 'key-unresolvable' },
    ],
  ];

  for (const [name, mutate, expected] of cases) {
    it(`13.15: ${name} fails with a documented reason and this service's words`, async () => {
      const result = await identity.verify({ credential: JSON.parse(JSON.stringify(mutate(credential))) });
      expect(result.verified).toBe(false);
      for (const [check, reason] of Object.entries(expected)) {
        expect(result.checks.find((candidate) => candidate.name === check)?.reason, check).toBe(reason);
      }
      for (const failed of failures(result)) {
        expect(FAILURE_REASONS).toContain(failed.reason);
        expect(failed.detail, failed.name).not.toMatch(LIBRARY_WORDS);
      }
    });
  }

  it('13.15: JOSE failures carry reasons too (bad JWS, alg none, tampered, wrong permissions)', async () => {
    const [header, payload] = jwt.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'vc+jwt' })).toString('base64url')}.${payload}.AAAA`;
    const expectations: [string, string, string][] = [
      ['not-a-jws', 'format', 'malformed'],
      [none, 'signature', 'algorithm-not-allowed'],
      [`${header}.${payload}.${Buffer.alloc(64).toString('base64url')}`, 'signature', 'signature-mismatch'],
    ];
    for (const [token, check, reason] of expectations) {
      const result = await identity.verify({ jwt: token });
      expect(result.checks.find((candidate) => candidate.name === check)?.reason, token).toBe(reason);
      for (const failed of failures(result)) expect(FAILURE_REASONS).toContain(failed.reason);
    }
    const bare = await identity.verify({ jwt, requiredPermissions: ['users:admin'] });
    expect(bare.checks.find((candidate) => candidate.name === 'permissions')?.reason).toBe('bare-credential');
  });
});

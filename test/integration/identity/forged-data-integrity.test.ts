// Finding 13.1: a Data Integrity proof covers the canonical RDF of a credential, not its JSON. Each
// forgery below changes the JSON (inline contexts, keyword aliases, @nest, @index) while keeping the
// N-Quads, so the proof still verifies; every decision must come from what the proof covers.
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import * as vc from '@digitalbazaar/vc';
import fc from 'fast-check';
import jsonld from 'jsonld';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantableScopes } from '../../../src/auth/scopes.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { offlineDocumentLoader } from '../../../src/domain/identity/document-loader.ts';
import { createIdentityService, type IdentityService } from '../../../src/domain/identity/service.ts';
import type { VerifyResult } from '../../../src/domain/identity/verify-checks.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  createUser,
  type LedgerFixture,
  openLedger,
  TEST_PUBLIC_URL,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';
import { check, failedChecks } from './checks.ts';
import { newTestKey, registerKey, signedPresentation, type TestKey } from './test-keys.ts';

type Json = Record<string, any>;

const SECRET = 'identity-test-secret-0123456789abcdef';
const DAY = 24 * 3600 * 1000;
const CRED = 'https://www.w3.org/2018/credentials#';
const UNDEFINED_TERM = 'https://www.w3.org/ns/credentials/undefined-term#';
const XSD_DATE_TIME = 'http://www.w3.org/2001/XMLSchema#dateTime';

/** The document with one more (inline) context after its own. */
function withContext(document: Json, extra: Json): Json {
  return { ...document, '@context': [...[document['@context']].flat(), extra] };
}

describe.each(DB_KINDS)('13.1: forged Data Integrity credentials on %s', (kind) => {
  let fixture: LedgerFixture;
  let identity: IdentityService;
  let alice: TestUser;
  let holder: TestKey;
  let role: Json;
  const loader = () => offlineDocumentLoader(async (did) => identity.resolveDid(did));

  /** Canonical N-Quads of the unsecured document (inline contexts need no loading). */
  async function nquads(document: Json): Promise<string> {
    const { proof: _proof, ...unsecured } = document;
    return jsonld.canonize(unsecured, {
      algorithm: 'RDFC-1.0',
      format: 'application/n-quads',
      documentLoader: loader(),
      safe: true,
    });
  }

  /** The forgery keeps the signed RDF (so the proof still verifies). */
  async function expectSameRdf(forged: Json, original: Json): Promise<void> {
    expect(await nquads(forged)).toBe(await nquads(original));
  }

  async function presentation(credential: Json, challenge: string): Promise<Json> {
    return signedPresentation(
      holder,
      { holder: holder.did, verifiableCredential: [credential] },
      { challenge, documentLoader: loader() },
    );
  }

  beforeAll(async () => {
    fixture = await openLedger(kind);
    identity = await createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox(SECRET),
      publicUrl: TEST_PUBLIC_URL,
    });
    alice = await createUser(fixture);
    holder = await newTestKey();
    await registerKey(identity, alice.userId, holder);
    role = (
      await identity.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: holder.did,
        formats: ['data-integrity'],
      })
    ).credential;
  });

  afterAll(async () => {
    await fixture?.close();
  });

  /** `permissions` made an alias of @index (no triple), the real list kept under another term. */
  function rescopedToAdmin(credential: Json): Json {
    const forged = withContext(credential, {
      realPermissions: `${UNDEFINED_TERM}permissions`,
      permissions: '@index',
    });
    const { permissions, ...subject } = credential.credentialSubject;
    forged.credentialSubject = { ...subject, realPermissions: permissions, permissions: 'users:admin' };
    return forged;
  }

  it('13.1: a role credential re-scoped to users:admin by an inline context is refused and grants nothing', async () => {
    const forged = rescopedToAdmin(role);
    await expectSameRdf(forged, role);
    const result = await identity.verify({ credential: forged, requiredPermissions: ['users:admin'] });
    expect(result.verified).toBe(false);
    expect(check(result, 'format')?.passed).toBe(false);
    expect(check(result, 'format')?.detail).toMatch(/inline context/);
    expect(result.grantedPermissions).toEqual([]);
  });

  it('13.1: the re-scoped role credential inside a holder-bound presentation grants nothing', async () => {
    const forged = rescopedToAdmin(role);
    const signed = await presentation(forged, 'c-13-1');
    const result = await identity.verify({
      presentation: signed,
      challenge: 'c-13-1',
      requiredPermissions: ['users:admin'],
    });
    expect(result.verified).toBe(false);
    expect(result.grantedPermissions).not.toContain('users:admin');
    expect(check(result, 'format')?.detail).toMatch(/verifiableCredential\[0\].*inline context/);
  });

  it('13.1: a revoked credential whose status entry is moved under an alias or @nest is still refused', async () => {
    const issued = await identity.issueCredential(alice, {
      type: 'PlayerRoleCredential',
      subjectDid: holder.did,
      formats: ['data-integrity'],
    });
    await identity.revokeCredential(alice, issued.id);
    const { credentialStatus, ...rest } = issued.credential as Json;
    const aliased = withContext(rest, { st: { '@id': `${CRED}credentialStatus`, '@type': '@id' } });
    aliased.st = credentialStatus;
    const nested = { ...rest, '@nest': { credentialStatus } };
    for (const forged of [aliased, nested]) {
      await expectSameRdf(forged, issued.credential);
      const result = await identity.verify({ credential: forged, requiredPermissions: ['assets:read'] });
      expect(result.verified).toBe(false);
      expect(result.grantedPermissions).toEqual([]);
    }
    // Without an inline context, the status is read where the proof puts it: revoked.
    const result = await identity.verify({ credential: nested });
    expect(failedChecks(result)).toEqual(['status']);
    expect(check(result, 'status')?.detail).toMatch(/revoked/);
  });

  it('13.1: an expired credential whose validUntil is moved under an alias or @nest is still expired', async () => {
    const past = await createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox(SECRET),
      publicUrl: TEST_PUBLIC_URL,
      now: () => new Date(Date.now() - 30 * DAY),
    });
    const expired = (
      await past.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: holder.did,
        validUntil: new Date(Date.now() - DAY).toISOString(),
        formats: ['data-integrity'],
      })
    ).credential as Json;
    const { validUntil, ...rest } = expired;
    const aliased = withContext(rest, { until: { '@id': `${CRED}validUntil`, '@type': XSD_DATE_TIME } });
    aliased.until = validUntil;
    const nested = { ...rest, '@nest': { validUntil } };
    for (const forged of [aliased, nested]) {
      await expectSameRdf(forged, expired);
      const result = await identity.verify({ credential: forged, requiredPermissions: ['assets:read'] });
      expect(result.verified).toBe(false);
      expect(result.grantedPermissions).toEqual([]);
    }
    const result = await identity.verify({ credential: nested });
    expect(failedChecks(result)).toEqual(['validity']);
    expect(check(result, 'validity')?.detail).toMatch(/Expired/);
  });

  it('13.1: the public status list credential re-typed as a PlayerRoleCredential is refused', async () => {
    const listId = (role.credentialStatus as Json).statusListCredential.split('/').pop();
    const list = (await identity.statusListCredential(listId, 'json')).body as Json;
    expect((await identity.verify({ credential: list })).verified).toBe(true);
    const forged = withContext(list, {
      PlayerRoleCredential: 'https://www.w3.org/ns/credentials/status#BitstringStatusListCredential',
      permissions: '@index',
    });
    forged.type = ['VerifiableCredential', 'PlayerRoleCredential'];
    forged.credentialSubject = { ...list.credentialSubject, permissions: 'users:admin' };
    await expectSameRdf(forged, list);
    const result = await identity.verify({ credential: forged, requiredPermissions: ['users:admin'] });
    expect(result.verified).toBe(false);
    expect(result.grantedPermissions).toEqual([]);
    expect(result.types).not.toContain('PlayerRoleCredential');
  });

  it('13.1: a status list credential is never accepted as another type, even when signed so', async () => {
    const key = await newTestKey();
    const signed = await vc.issue({
      credential: {
        '@context': ['https://www.w3.org/ns/credentials/v2', 'https://www.w3.org/ns/credentials/examples/v2'],
        type: ['VerifiableCredential', 'BitstringStatusListCredential', 'ExampleRoleCredential'],
        issuer: key.did,
        credentialSubject: {
          id: holder.did,
          type: 'BitstringStatusList',
          statusPurpose: 'revocation',
          encodedList: 'uH4sIAAAAAAAAA-3BMQEAAADCoPVPbQwfoAAAAAAAAAAAAAAAAAAAAIC3AYbSVKsAQAAA',
        },
      },
      suite: new DataIntegrityProof({ signer: (await key.multikey()).signer(), cryptosuite: eddsaRdfc2022 }),
      documentLoader: loader(),
    });
    const result = await identity.verify({ credential: signed });
    expect(check(result, 'signature')?.passed).toBe(true);
    expect(check(result, 'format')?.passed).toBe(false);
    expect(check(result, 'format')?.detail).toMatch(/BitstringStatusListCredential/);
  });

  it('13.1: keyword aliases of @type and @id are refused', async () => {
    const { type, id, ...rest } = role;
    const { id: subjectId, ...subject } = role.credentialSubject;
    const forged = withContext(rest, { t: '@type', i: '@id' });
    Object.assign(forged, { t: type, i: id, credentialSubject: { ...subject, i: subjectId } });
    await expectSameRdf(forged, role);
    const result = await identity.verify({ credential: forged, requiredPermissions: ['assets:read'] });
    expect(result.verified).toBe(false);
    expect(check(result, 'format')?.detail).toMatch(/inline context/);
    expect(result.grantedPermissions).toEqual([]);
  });

  it('13.1: any JSON change that keeps the N-Quads is refused or decides exactly as the original', async () => {
    const decision = (result: VerifyResult) => ({
      verified: result.verified,
      issuer: result.issuer,
      subject: result.subject,
      types: [...result.types].sort(),
      granted: [...result.grantedPermissions].sort(),
      checks: result.checks.map(({ name, passed }) => ({ name, passed })),
    });
    // In a holder-bound presentation, where a role credential grants its permissions.
    const request = { challenge: 'c-prop', requiredPermissions: ['assets:read'] };
    const verdict = async (credential: Json) =>
      identity.verify({ ...request, presentation: await presentation(credential, 'c-prop') });
    const baseline = decision(await verdict(role));
    expect(baseline.verified).toBe(true);
    expect(baseline.granted).toContain('assets:read');

    // Each mutation keeps the RDF the proof covers (checked below before the verdict is compared).
    const mutations: Record<string, (document: Json) => void> = {
      reverseTypes: (d) => d.type.reverse(),
      nestValidity: (d) => {
        d['@nest'] = { validFrom: d.validFrom, validUntil: d.validUntil };
        delete d.validFrom;
        delete d.validUntil;
      },
      nestStatus: (d) => {
        d['@nest'] = { ...d['@nest'], credentialStatus: d.credentialStatus };
        delete d.credentialStatus;
      },
      nestPermissions: (d) => {
        d.credentialSubject['@nest'] = { permissions: d.credentialSubject.permissions };
        delete d.credentialSubject.permissions;
      },
      indexSubject: (d) => {
        d.credentialSubject['@index'] = 'users:admin';
      },
      fullIriPermissions: (d) => {
        d.credentialSubject[`${UNDEFINED_TERM}permissions`] = d.credentialSubject.permissions;
        delete d.credentialSubject.permissions;
      },
      valueObjectRole: (d) => {
        d.credentialSubject.role = { '@value': d.credentialSubject.role };
      },
      aliasRole: (d) => {
        Object.assign(d, withContext(d, { r: `${UNDEFINED_TERM}role` }));
        d.credentialSubject.r = d.credentialSubject.role;
        delete d.credentialSubject.role;
      },
      indexAlias: (d) => {
        Object.assign(d, withContext(d, { note: '@index' }));
        d.credentialSubject.note = 'users:admin';
      },
      reorderKeys: (d) => {
        for (const key of Object.keys(d).reverse()) {
          const value = d[key];
          delete d[key];
          d[key] = value;
        }
      },
    };
    const names = Object.keys(mutations);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.constantFrom(...names), { minLength: 1, maxLength: 4 }),
        async (chosen) => {
          const forged = structuredClone(role);
          for (const name of chosen) mutations[name](forged);
          // Combinations that are not JSON-LD at all (e.g. two @index) are no RDF-preserving change.
          fc.pre((await nquads(forged).catch(() => null)) === (await nquads(role)));
          const result = await verdict(forged);
          const refused = !result.verified && check(result, 'format')?.passed === false;
          if (!refused) expect(decision(result)).toEqual(baseline);
          expect(result.grantedPermissions.includes('users:admin')).toBe(false);
        },
      ),
      { numRuns: 30 },
    );
  });
});

// Issue 19: credentials and presentations from other issuers verify as the VC Data Model 2.0
// Recommendation describes them. Holder binding is its own check (a presentation may have no holder;
// a holder need not be every subject), permissions still need a holder-bound presentation for the
// verifier's challenge (13.3); ecdsa-rdfc-2019 and eddsa-jcs-2022 proofs verify; enveloped
// credentials and presentations (VC-JOSE-COSE) and VC Data Model 1.1 JWT presentations are opened.
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import * as vc from '@digitalbazaar/vc';
import { EdDSASigner } from 'did-jwt';
import { createVerifiablePresentationJwt } from 'did-jwt-vc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantableScopes } from '../../../src/auth/scopes.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { offlineDocumentLoader } from '../../../src/domain/identity/document-loader.ts';
import { createIdentityService, type IdentityService } from '../../../src/domain/identity/service.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  createUser,
  type LedgerFixture,
  openLedger,
  TEST_PUBLIC_URL,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';
import { readConformanceJson } from '../../unit/identity/conformance.ts';
import { check, failedChecks } from './checks.ts';
import {
  newTestKey,
  registerKey,
  signedPresentation as signPresentationBy,
  type TestKey,
} from './test-keys.ts';

type Json = Record<string, any>;

const ECDSA_EXAMPLES = [
  '03-use-of-the-id-property',
  '04-use-of-the-type-property',
  '05-use-of-the-name-and-description-properties',
  '07-use-of-the-issuer-property',
  '08-expanded-use-of-the-issuer-property',
  '09-use-of-the-credentialsubject-property',
  '11-use-of-the-validfrom-and-validuntil-properties',
  '22-a-simple-credential',
  '35-use-of-issuer-properties',
].map((name) => `vc/vcdm2.0-REC-examples/${name}--ecdsa-rdfc-2019-1.json`);

const suiteFixtures = readConformanceJson<{ challenge: string; vc_jwt: string; vp_jwt: string }>(
  'vc/vcdm2-test-suite-fixtures/fixtures.json',
);

const envelope = (type: string, id: string) => ({
  '@context': 'https://www.w3.org/ns/credentials/v2',
  type,
  id,
});

describe.each(DB_KINDS)('VC Data Model 2.0 interoperability on %s', (kind) => {
  let fixture: LedgerFixture;
  let identity: IdentityService;
  let alice: TestUser;
  let holder: TestKey;
  let other: TestKey;
  let roleCredential: Json;
  let roleJwt: string;
  /** A credential about someone else (did:example:subject), issued by `other`'s did:key. */
  let foreignCredential: Json;

  const loader = () => offlineDocumentLoader(async (did) => identity.resolveDid(did));

  async function signedPresentation(
    body: Json,
    options: { signer?: TestKey; challenge?: string; domain?: string } = {},
  ): Promise<Json> {
    return signPresentationBy(options.signer ?? holder, body, {
      challenge: options.challenge ?? 'c-19',
      domain: options.domain,
      documentLoader: loader(),
    });
  }

  beforeAll(async () => {
    fixture = await openLedger(kind);
    identity = await createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox('identity-test-secret-0123456789abcdef'),
      publicUrl: TEST_PUBLIC_URL,
    });
    alice = await createUser(fixture);
    holder = await newTestKey();
    other = await newTestKey();
    await registerKey(identity, alice.userId, holder);
    const issued = await identity.issueCredential(alice, {
      type: 'PlayerRoleCredential',
      subjectDid: holder.did,
    });
    roleCredential = issued.credential;
    roleJwt = issued.jwt as string;
    foreignCredential = await vc.issue({
      credential: {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        type: ['VerifiableCredential'],
        issuer: other.did,
        credentialSubject: { id: 'did:example:subject' },
      },
      suite: new DataIntegrityProof({
        signer: (await other.multikey()).signer(),
        cryptosuite: eddsaRdfc2022,
      }),
      documentLoader: loader(),
    });
  });

  afterAll(async () => {
    await fixture?.close();
  });

  describe('19.1 holder binding', () => {
    it('verifies a presentation with no holder; holder-binding fails as advisory and grants nothing', async () => {
      const presentation = await signedPresentation({ verifiableCredential: [roleCredential] });
      const result = await identity.verify({
        presentation,
        challenge: 'c-19',
        requiredPermissions: ['assets:read'],
      });
      expect(check(result, 'holder-binding')).toMatchObject({
        passed: false,
        advisory: true,
        reason: 'no-holder',
      });
      expect(check(result, 'permissions')).toMatchObject({ passed: false, reason: 'not-holder-bound' });
      expect(result.grantedPermissions).toEqual([]);
      const plain = await identity.verify({ presentation, challenge: 'c-19' });
      expect(plain.verified, JSON.stringify(plain.checks)).toBe(true);
    });

    it('verifies a holder presenting a credential about someone else (the holder need not be the subject)', async () => {
      const presentation = await signedPresentation({
        holder: holder.did,
        verifiableCredential: [foreignCredential],
      });
      const result = await identity.verify({ presentation, challenge: 'c-19' });
      expect(result.verified, JSON.stringify(result.checks)).toBe(true);
      expect(check(result, 'holder-binding')).toEqual({ name: 'holder-binding', passed: true });
    });

    it('grants a role credential only to its subject presenting it for the challenge', async () => {
      const own = await signedPresentation({ holder: holder.did, verifiableCredential: [roleCredential] });
      const granted = await identity.verify({
        presentation: own,
        challenge: 'c-19',
        requiredPermissions: ['assets:read'],
      });
      expect(granted.verified).toBe(true);
      expect(granted.grantedPermissions).toContain('assets:read');
      // Without a verifier challenge it could be a replay: it verifies, bound to no one.
      const unbound = await identity.verify({ presentation: own, requiredPermissions: ['assets:read'] });
      expect(check(unbound, 'holder-binding')).toMatchObject({ advisory: true, reason: 'no-challenge' });
      expect(check(unbound, 'permissions')?.reason).toBe('not-holder-bound');
      expect(unbound.grantedPermissions).toEqual([]);
      // Someone else presenting the holder's role credential as its own holder gets nothing.
      const borrowed = await signedPresentation(
        { holder: other.did, verifiableCredential: [roleCredential] },
        { signer: other },
      );
      const result = await identity.verify({
        presentation: borrowed,
        challenge: 'c-19',
        requiredPermissions: ['assets:read'],
      });
      expect(check(result, 'holder-binding')?.passed).toBe(true);
      expect(check(result, 'permissions')?.reason).toBe('holder-not-subject');
      expect(result.grantedPermissions).toEqual([]);
    });

    it('refuses a named holder that did not sign, and a replay for another challenge (not advisory)', async () => {
      const stolen = await signedPresentation(
        { holder: holder.did, verifiableCredential: [roleCredential] },
        { signer: other },
      );
      const result = await identity.verify({ presentation: stolen, challenge: 'c-19' });
      expect(result.verified).toBe(false);
      expect(check(result, 'holder-binding')).toMatchObject({ passed: false, reason: 'holder-not-signer' });
      expect(check(result, 'holder-binding')?.advisory).toBeUndefined();
      const replay = await identity.verify({
        presentation: await signedPresentation({ verifiableCredential: [foreignCredential] }),
        challenge: 'another',
      });
      expect(replay.verified).toBe(false);
      expect(check(replay, 'holder-binding')?.reason).toBe('challenge-mismatch');
    });
  });

  describe('19.2 cryptosuites', () => {
    it('verifies the signatures of the 9 ecdsa-rdfc-2019 examples of the Recommendation', async () => {
      for (const file of ECDSA_EXAMPLES) {
        const result = await identity.verify({ credential: readConformanceJson(file) });
        expect(check(result, 'format')?.passed, file).toBe(true);
        expect(check(result, 'signature'), file).toEqual({ name: 'signature', passed: true });
        // Their issuers are https: URLs (or objects), not the signing did:key.
        expect(
          failedChecks(result).filter((name) => name !== 'validity'),
          file,
        ).toEqual(['issuer']);
      }
      expect(ECDSA_EXAMPLES).toHaveLength(9);
    });

    it('refuses a tampered ecdsa-rdfc-2019 credential', async () => {
      const credential = readConformanceJson(ECDSA_EXAMPLES[7]);
      credential.credentialSubject.name = 'Mallory';
      expect(check(await identity.verify({ credential }), 'signature')?.reason).toBe('signature-mismatch');
    });

    it('verifies the official eddsa-jcs-2022 vector and refuses it tampered, re-contexted or inline-contexted', async () => {
      const vector = readConformanceJson('vc/vc-di-eddsa-TestVectors/eddsa-jcs-2022/signedJCS.json');
      expect(check(await identity.verify({ credential: vector }), 'signature')?.passed).toBe(true);
      const tampered = structuredClone(vector);
      tampered.credentialSubject.alumniOf = 'Mallory University';
      expect(check(await identity.verify({ credential: tampered }), 'signature')?.reason).toBe(
        'signature-mismatch',
      );
      // The proof names fewer contexts than the document: the JSON would be read with a context
      // the signer did not sign for.
      const shorter = structuredClone(vector);
      shorter.proof['@context'] = ['https://www.w3.org/ns/credentials/v2'];
      expect(check(await identity.verify({ credential: shorter }), 'signature')?.reason).toBe(
        'proof-context-mismatch',
      );
      // 13.1 still holds: an inline context is refused before anything is read.
      const inline = structuredClone(vector);
      inline['@context'] = [...inline['@context'], { alumniOf: 'https://example.com/forged' }];
      inline.proof['@context'] = inline['@context'];
      expect(check(await identity.verify({ credential: inline }), 'format')?.reason).toBe(
        'context-not-allowed',
      );
    });

    it('verifies an eddsa-rdfc-2022 proof set only when every proof verifies; refuses proof chains and large sets', async () => {
      const set = readConformanceJson('vc/vc-di-eddsa-TestVectors/proof-set-chain/signedProofSet2.json');
      expect(check(await identity.verify({ credential: set }), 'signature')?.passed).toBe(true);
      const broken = structuredClone(set);
      broken.proof[1].proofValue = broken.proof[0].proofValue;
      expect(check(await identity.verify({ credential: broken }), 'signature')?.passed).toBe(false);
      // A proof chain (previousProof) is not verified, by name rather than as a bad signature.
      const chain = check(
        await identity.verify({
          credential: readConformanceJson(
            'vc/vc-di-eddsa-TestVectors/proof-set-chain/signedProofChain1.json',
          ),
        }),
        'signature',
      );
      expect(chain).toMatchObject({ passed: false, reason: 'unsupported-proof' });
      expect(chain?.detail).toMatch(/previousProof/);
      // Each proof costs a canonicalization: a set larger than MAX_PROOFS is refused unchecked.
      const large = { ...set, proof: [...set.proof, ...set.proof, set.proof[0]] };
      const refused = check(await identity.verify({ credential: large }), 'signature');
      expect(refused).toMatchObject({ passed: false, reason: 'unsupported-proof' });
      expect(refused?.detail).toMatch(/5 proofs; at most 4/);
    });
  });

  describe('19.4 contexts', () => {
    it('bundles the published contexts the Recommendation examples use, and refuses the others by name', async () => {
      // A bbs-2023 example (a cryptosuite not verified here) with the citizenship v3 context: the
      // context is known and loaded, and JSON-LD in safe mode finds `lprCategory` undefined where
      // the example uses it (it is defined for PermanentResidentCard, not PermanentResident).
      const bbs = await identity.verify({
        credential: readConformanceJson(
          'vc/vcdm2.0-REC-examples/30-verifiable-credential-using-the-data-integrity-bbs-cryptosui.json',
        ),
      });
      expect(check(bbs, 'format')?.reason, JSON.stringify(bbs.checks)).toBe('invalid-json-ld');
      expect(check(bbs, 'format')?.detail).toMatch(/^JSON-LD: invalid property \(lprCategory\)/);
      expect(check(bbs, 'signature')?.reason).toBe('unsupported-proof');
      // https://w3id.org/age/v1 has no published document to bundle: refused, never fetched.
      const age = await identity.verify({
        credential: readConformanceJson(
          'vc/vcdm2.0-REC-examples/27-use-of-the-refreshservice-property-by-an-issuer.json',
        ),
      });
      expect(check(age, 'format')?.reason).toBe('context-not-allowed');
      expect(check(age, 'format')?.detail).toMatch(/age\/v1 is not a known context/);
      // The Open Badges 3.0.3 context (from its npm package) expands an OpenBadgeCredential.
      const badge = await vc.issue({
        credential: {
          '@context': [
            'https://www.w3.org/ns/credentials/v2',
            'https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json',
          ],
          type: ['VerifiableCredential', 'OpenBadgeCredential'],
          issuer: { id: other.did, type: 'Profile', name: 'Example University' },
          name: 'Teamwork Badge',
          credentialSubject: {
            id: holder.did,
            type: 'AchievementSubject',
            achievement: {
              id: 'https://example.edu/achievements/teamwork',
              type: 'Achievement',
              name: 'Teamwork',
              description: 'Works well with others.',
              criteria: { narrative: 'Team projects.' },
            },
          },
        },
        suite: new DataIntegrityProof({
          signer: (await other.multikey()).signer(),
          cryptosuite: eddsaRdfc2022,
        }),
        documentLoader: loader(),
      });
      const result = await identity.verify({ credential: badge });
      expect(result.verified, JSON.stringify(result.checks)).toBe(true);
      expect(result.types).toEqual(['VerifiableCredential', 'OpenBadgeCredential']);
    });
  });

  describe('19.3 envelopes', () => {
    it('opens a top-level EnvelopedVerifiableCredential carrying a vc+jwt', async () => {
      const result = await identity.verify({
        credential: envelope('EnvelopedVerifiableCredential', `data:application/vc+jwt,${roleJwt}`),
      });
      expect(result.verified, JSON.stringify(result.checks)).toBe(true);
      expect(result).toMatchObject({ kind: 'credential', subject: holder.did });
    });

    it("verifies the W3C suite's enveloped VC Data Model 1.1 presentation JWT for its challenge", async () => {
      const presentation = envelope(
        'EnvelopedVerifiablePresentation',
        `data:application/jwt,${suiteFixtures.vp_jwt}`,
      );
      const result = await identity.verify({ presentation, challenge: suiteFixtures.challenge });
      expect(result.verified, JSON.stringify(result.checks)).toBe(true);
      expect(result).toMatchObject({
        kind: 'presentation',
        subject: 'did:key:z6Mkj8h3kzWZrPiucoyY9LGCTpXhCqBoX3doDmHz5MaPxnvi',
      });
      expect(check(result, 'holder-binding')?.passed).toBe(true);
      // The same JWT sent as `jwt` is the same presentation.
      const bare = await identity.verify({ jwt: suiteFixtures.vp_jwt, challenge: suiteFixtures.challenge });
      expect(bare.checks).toEqual(result.checks);
    });

    it('verifies a VC Data Model 1.1 JWT presentation made by did-jwt-vc, granting the holder its role', async () => {
      const vp = await createVerifiablePresentationJwt(
        {
          vp: {
            '@context': ['https://www.w3.org/2018/credentials/v1'],
            type: ['VerifiablePresentation'],
            verifiableCredential: [roleJwt],
          },
          nonce: 'n-19',
          aud: 'game.example.com',
        },
        { did: holder.did, signer: EdDSASigner(holder.secretKey), alg: 'EdDSA' },
      );
      const result = await identity.verify({
        jwt: vp,
        challenge: 'n-19',
        domain: 'game.example.com',
        requiredPermissions: ['assets:read'],
      });
      expect(result.verified, JSON.stringify(result.checks)).toBe(true);
      expect(result).toMatchObject({ kind: 'presentation', subject: holder.did });
      expect(result.grantedPermissions).toContain('assets:read');
      const replayed = await identity.verify({ jwt: vp, challenge: 'n-20' });
      expect(check(replayed, 'holder-binding')?.reason).toBe('challenge-mismatch');
      const stolen = await createVerifiablePresentationJwt(
        {
          vp: {
            '@context': ['https://www.w3.org/2018/credentials/v1'],
            type: ['VerifiablePresentation'],
            verifiableCredential: [roleJwt],
          },
          nonce: 'n-19',
        },
        { did: other.did, signer: EdDSASigner(other.secretKey), alg: 'EdDSA' },
      );
      const borrowed = await identity.verify({
        jwt: stolen,
        challenge: 'n-19',
        requiredPermissions: ['assets:read'],
      });
      expect(check(borrowed, 'permissions')?.reason).toBe('holder-not-subject');
      expect(borrowed.grantedPermissions).toEqual([]);
    });

    it("opens the W3C suite's enveloped credential, whose issuer names no key (signature: key-unresolvable)", async () => {
      const result = await identity.verify({
        credential: envelope('EnvelopedVerifiableCredential', `data:application/jwt,${suiteFixtures.vc_jwt}`),
      });
      expect(check(result, 'format')?.passed).toBe(true);
      expect(check(result, 'signature')?.reason).toBe('key-unresolvable');
    });

    it('refuses malformed envelopes and those it does not open, with documented reasons', async () => {
      const id = `data:application/vc+jwt,${roleJwt}`;
      const cases: [Json, string][] = [
        [{ ...envelope('EnvelopedVerifiableCredential', id), '@context': [] }, 'malformed'],
        [
          {
            ...envelope('EnvelopedVerifiableCredential', id),
            '@context': 'https://www.w3.org/ns/credentials/examples/v2',
          },
          'malformed',
        ],
        [envelope('EnvelopedVerifiableCredential', roleJwt), 'malformed'],
        [
          envelope('EnvelopedVerifiableCredential', `data:application/vc+sd-jwt,${roleJwt}~`),
          'envelope-unsupported',
        ],
        [
          envelope('EnvelopedVerifiableCredential', `data:application/vc+cose;base64,AAAA`),
          'envelope-unsupported',
        ],
      ];
      for (const [credential, reason] of cases) {
        const result = await identity.verify({ credential });
        expect(result.verified, JSON.stringify(credential)).toBe(false);
        expect(check(result, 'format')?.reason, JSON.stringify(credential)).toBe(reason);
      }
      const vp = `data:application/jwt,${suiteFixtures.vp_jwt}`;
      for (const presentation of [
        { ...envelope('EnvelopedVerifiablePresentation', vp), '@context': [] },
        envelope('EnvelopedVerifiablePresentation', suiteFixtures.vp_jwt),
        { ...envelope('EnvelopedVerifiablePresentation', vp), type: ['VerifiablePresentation'] },
      ]) {
        const result = await identity.verify({ presentation, challenge: suiteFixtures.challenge });
        expect(result.verified, JSON.stringify(presentation)).toBe(false);
      }
    });
  });
});

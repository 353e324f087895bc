import { gunzipSync } from 'node:zlib';
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import * as vc from '@digitalbazaar/vc';
import { EdDSASigner } from 'did-jwt';
import { createVerifiableCredentialJwt } from 'did-jwt-vc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantableScopes } from '../../../src/auth/scopes.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { offlineDocumentLoader } from '../../../src/domain/identity/document-loader.ts';
import { decodeMultibase } from '../../../src/domain/identity/multibase.ts';
import { createIdentityService, type IdentityService } from '../../../src/domain/identity/service.ts';
import { isBitSet } from '../../../src/domain/identity/status-list.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  createUser,
  type LedgerFixture,
  openLedger,
  TEST_PUBLIC_URL,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';
import { readConformanceJson, vcdm2SuiteInputs } from '../../unit/identity/conformance.ts';
import { check, failedChecks } from './checks.ts';
import { newTestKey, registerKey, signedPresentation, type TestKey, unsecuredJws } from './test-keys.ts';

const SECRET = 'identity-test-secret-0123456789abcdef';
const DAY = 24 * 3600 * 1000;

describe.each(DB_KINDS)('identity on %s', (kind) => {
  let fixture: LedgerFixture;
  let identity: IdentityService;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let aliceDid: string;
  let bobDid: string;
  let nftId: string;
  let holder: TestKey;

  const serviceAt = (now: () => Date) =>
    createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox(SECRET),
      publicUrl: TEST_PUBLIC_URL,
      now,
    });

  beforeAll(async () => {
    fixture = await openLedger(kind);
    identity = await serviceAt(() => new Date());
    alice = await createUser(fixture);
    bob = await createUser(fixture);
    admin = await createUser(fixture, 'admin');
    const studio = await createUser(fixture, 'studio');
    await fixture.ledger.collections.create(studio, { id: 'dawn-quest', name: 'Dawn Quest' });
    const nft = await fixture.ledger.assets.createNft(alice, {
      name: 'Sword of Dawn',
      metadata: { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' },
    } as never);
    nftId = (nft.body as { id: string }).id;
    await fixture.ledger.assets.createCurrency(studio, {
      id: 'gold',
      name: 'Gold',
      symbol: 'GLD',
      decimals: 2,
      collection: 'dawn-quest',
      metadata: { image: 'https://cdn.example.com/gold.png', attributes: [], creator: 'Example Studio' },
    } as never);
    await fixture.ledger.assets.mint(studio, 'gold', { to: alice.wallet, amount: '10.00' } as never);
    aliceDid = (await identity.createIdentity(alice.userId)).did;
    bobDid = (await identity.createIdentity(bob.userId)).did;
    holder = await newTestKey();
    await registerKey(identity, alice.userId, holder);
  });

  afterAll(async () => {
    await fixture?.close();
  });

  describe('DIDs', () => {
    it('creates a did:key whose document is the did:key specification one', async () => {
      const created = await identity.createIdentity(alice.userId);
      expect(created.keyCustody).toBe('service');
      expect(created.did).toMatch(/^did:key:z6Mk/);
      expect(created.didDocument).toEqual(await identity.resolveDid(created.did));
      expect(created.didDocument.assertionMethod).toEqual([`${created.did}#${created.did.slice(8)}`]);
    });

    it('registers a caller-held key once', async () => {
      const key = await newTestKey();
      const created = await registerKey(identity, bob.userId, key);
      expect(created).toMatchObject({ did: key.did, keyCustody: 'caller' });
      await expect(registerKey(identity, alice.userId, key)).rejects.toMatchObject({
        status: 409,
        type: '/problems/did-exists',
      });
    });

    it('refuses a public key that is not an Ed25519 point', async () => {
      // base58 of 0xed01 followed by y = 2 (not on the curve).
      const offCurve = `z${(await import('../../../src/domain/identity/multibase.ts')).base58btcEncode(Uint8Array.from([0xed, 0x01, 2, ...new Array(31).fill(0)]))}`;
      await expect(identity.createIdentity(alice.userId, offCurve)).rejects.toMatchObject({
        status: 400,
        type: '/problems/invalid-public-key',
      });
    });

    it('publishes the service did:web with its signing key as an assertion method', async () => {
      const document = await identity.serviceDidDocument();
      expect(document.id).toBe('did:web:localhost%3A3000');
      expect(document.assertionMethod).toEqual([document.verificationMethod[0].id]);
      // A second instance over the same database signs with the same key.
      const other = await serviceAt(() => new Date());
      expect(await other.serviceDidDocument()).toEqual(document);
    });

    it('resolves did:jwk and refuses other methods and foreign did:web', async () => {
      const vectors = readConformanceJson('did-jwk/did-jwk-vectors.json').vectors;
      const document = await identity.resolveDid(vectors[0].did);
      expect(document.verificationMethod[0].publicKeyJwk).toEqual(
        vectors[0].expectedDidDocument_verbatim.verificationMethod[0].publicKeyJwk,
      );
      expect(document.assertionMethod).toEqual(vectors[0].expectedDidDocument_verbatim.assertionMethod);
      expect((await identity.resolveDid(vectors[1].did)).keyAgreement).toEqual(
        vectors[1].expectedDidDocument_verbatim.keyAgreement,
      );
      await expect(identity.resolveDid('did:ion:EiClkZMDxPKqC9c')).rejects.toMatchObject({
        type: '/problems/did-method-not-supported',
      });
      await expect(identity.resolveDid('did:web:example.com')).rejects.toMatchObject({ status: 404 });
    });
  });

  describe('issuing', () => {
    it('issues a role credential in both formats, each verifying with the role permissions', async () => {
      const issued = await identity.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: aliceDid,
      });
      expect(issued.credential).toMatchObject({
        issuer: 'did:web:localhost%3A3000',
        credentialSubject: {
          id: aliceDid,
          role: 'player',
          permissions: [
            'openid',
            'offline_access',
            'assets:read',
            'assets:write',
            'transfers:write',
            'identity:write',
          ],
        },
        proof: {
          type: 'DataIntegrityProof',
          cryptosuite: 'eddsa-rdfc-2022',
          proofPurpose: 'assertionMethod',
        },
      });
      const header = JSON.parse(Buffer.from((issued.jwt as string).split('.')[0], 'base64url').toString());
      expect(header).toEqual({
        alg: 'EdDSA',
        typ: 'vc+jwt',
        cty: 'vc',
        kid: (issued.credential.proof as { verificationMethod: string }).verificationMethod,
      });
      const { proof: _proof, ...unsigned } = issued.credential;
      expect(JSON.parse(Buffer.from((issued.jwt as string).split('.')[1], 'base64url').toString())).toEqual(
        unsigned,
      );

      for (const request of [{ jwt: issued.jwt as string }, { credential: issued.credential }]) {
        const result = await identity.verify(request);
        expect(result).toMatchObject({
          verified: true,
          kind: 'credential',
          subject: aliceDid,
          types: ['VerifiableCredential', 'PlayerRoleCredential'],
          grantedPermissions: [],
        });
        expect(result.checks.map((entry) => entry.name)).toEqual([
          'format',
          'signature',
          'issuer',
          'validity',
          'status',
        ]);
        // 13.3: on its own it grants nothing (the presentations below do).
        const asked = await identity.verify({ ...request, requiredPermissions: ['transfers:write'] });
        expect(failedChecks(asked)).toEqual(['permissions']);
        expect(check(asked, 'permissions')?.reason).toBe('bare-credential');
      }
    });

    it('issues ownership of an NFT and of a currency balance the wallet holds', async () => {
      for (const assetId of [nftId, 'gold']) {
        const issued = await identity.issueCredential(alice, {
          type: 'AssetOwnershipCredential',
          subjectDid: aliceDid,
          wallet: alice.wallet,
          assetId,
          formats: ['vc+jwt'],
        });
        expect(issued.credential).not.toHaveProperty('proof');
        expect(issued.credential.credentialSubject).toEqual({ id: aliceDid, wallet: alice.wallet, assetId });
        const result = await identity.verify({
          jwt: issued.jwt as string,
          requiredPermissions: ['assets:write'],
        });
        expect(failedChecks(result)).toEqual(['permissions']);
        expect(result.grantedPermissions).toEqual([]);
      }
    });

    it('refuses what the caller may not have attested', async () => {
      const ownership = {
        type: 'AssetOwnershipCredential' as const,
        subjectDid: aliceDid,
        wallet: alice.wallet,
        assetId: nftId,
      };
      await expect(identity.issueCredential(bob, ownership)).rejects.toMatchObject({ status: 403 });
      await expect(identity.issueCredential(bob, { ...ownership, subjectDid: bobDid })).rejects.toMatchObject(
        { status: 403 },
      );
      await expect(
        identity.issueCredential(bob, { ...ownership, subjectDid: bobDid, wallet: bob.wallet }),
      ).rejects.toMatchObject({
        status: 409,
        type: '/problems/ownership-not-held',
      });
      await expect(
        identity.issueCredential(alice, { ...ownership, assetId: 'nft_01JD3Z6W8Q5N2M7K4R9T1V0XYZ' }),
      ).rejects.toMatchObject({ status: 404 });
      await expect(
        identity.issueCredential(alice, { ...ownership, validUntil: '2020-01-01T00:00:00Z' }),
      ).rejects.toMatchObject({
        status: 422,
        type: '/problems/invalid-validity-period',
      });
      await expect(
        identity.issueCredential(bob, { type: 'PlayerRoleCredential', subjectDid: aliceDid }),
      ).rejects.toMatchObject({ status: 403 });
      const byAdmin = await identity.issueCredential(admin, {
        type: 'PlayerRoleCredential',
        subjectDid: aliceDid,
      });
      expect(byAdmin.credential.credentialSubject).toMatchObject({ id: aliceDid, role: 'player' });
    });
  });

  describe('rejections, each with the failing check', () => {
    let jwt: string;
    let credential: Record<string, unknown>;
    let attacker: TestKey;

    beforeAll(async () => {
      const issued = await identity.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: aliceDid,
      });
      jwt = issued.jwt as string;
      credential = issued.credential;
      attacker = await newTestKey();
    });

    it('rejects a tampered JWT and a tampered JSON-LD credential (signature)', async () => {
      const [header, payload, signature] = jwt.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      claims.credentialSubject.role = 'admin';
      const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
      expect(failedChecks(await identity.verify({ jwt: tampered }))).toEqual(['signature', 'issuer']);
      const edited = structuredClone(credential) as { credentialSubject: { permissions: string[] } };
      edited.credentialSubject.permissions.push('users:admin');
      expect(failedChecks(await identity.verify({ credential: edited as never }))).toEqual([
        'signature',
        'issuer',
      ]);
    });

    it('rejects an expired and a not-yet-valid credential (validity)', async () => {
      const past = await serviceAt(() => new Date(Date.now() - 30 * DAY));
      const expired = await past.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: aliceDid,
        validUntil: new Date(Date.now() - DAY).toISOString(),
      });
      const future = await serviceAt(() => new Date(Date.now() + DAY));
      const early = await future.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: aliceDid,
      });
      for (const [issued, reason] of [
        [expired, /Expired/],
        [early, /Not valid yet/],
      ] as const) {
        for (const request of [{ jwt: issued.jwt as string }, { credential: issued.credential }]) {
          const result = await identity.verify(request);
          expect(failedChecks(result)).toEqual(['validity']);
          expect(check(result, 'validity')?.detail).toMatch(reason);
        }
      }
    });

    it('rejects a credential signed with another key under the service key id (signature)', async () => {
      const header = JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString());
      const claims = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
      const forged = await attacker.signJws(claims, header);
      expect(failedChecks(await identity.verify({ jwt: forged }))).toEqual(['signature', 'issuer']);
    });

    it('rejects a credential claiming the service as issuer but signed by another DID (issuer)', async () => {
      const claims = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
      const forged = await attacker.signJws(claims, { typ: 'vc+jwt', kid: attacker.methodId });
      const result = await identity.verify({ jwt: forged, requiredPermissions: ['assets:read'] });
      expect(failedChecks(result)).toEqual(['issuer', 'permissions']);
      expect(result.grantedPermissions).toEqual([]);
      const { proof: _proof, ...unsigned } = credential;
      const signed = await vc.issue({
        credential: unsigned,
        suite: new DataIntegrityProof({
          signer: (await attacker.multikey()).signer(),
          cryptosuite: eddsaRdfc2022,
        }),
        documentLoader: offlineDocumentLoader(async (did) => identity.resolveDid(did)),
      });
      expect(failedChecks(await identity.verify({ credential: signed }))).toEqual(['issuer']);
    });

    it('rejects alg none and symmetric algorithms (signature)', async () => {
      const claims = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
      const none = await identity.verify({ jwt: unsecuredJws(claims, { typ: 'vc+jwt' }) });
      expect(failedChecks(none)).toEqual(['signature', 'issuer']);
      expect(check(none, 'signature')?.detail).toMatch(/alg "none"/);
      const hmac = await identity.verify({ jwt: unsecuredJws(claims, { alg: 'HS256', typ: 'vc+jwt' }) });
      expect(check(hmac, 'signature')?.detail).toMatch(/symmetric/);
    });

    it('rejects a revoked credential (status), revocable only by its requester or an admin', async () => {
      const issued = await identity.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: aliceDid,
      });
      await expect(identity.revokeCredential(bob, issued.id)).rejects.toMatchObject({ status: 404 });
      const revoked = await identity.revokeCredential(alice, issued.id);
      expect(revoked).toMatchObject({ id: issued.id, status: 'revoked' });
      expect(await identity.revokeCredential(admin, issued.id)).toEqual(revoked);
      for (const request of [{ jwt: issued.jwt as string }, { credential: issued.credential }]) {
        const result = await identity.verify({ ...request, requiredPermissions: ['assets:read'] });
        expect(failedChecks(result)).toEqual(['status', 'permissions']);
        expect(check(result, 'status')?.detail).toMatch(/revoked/);
      }
      // The published list has the bit set; the list credential verifies as this service's.
      const listId = issued.status.statusListCredential.split('/').pop() as string;
      const list = (await identity.statusListCredential(listId, 'json')).body as Record<string, any>;
      const bits = gunzipSync(decodeMultibase(list.credentialSubject.encodedList));
      expect(bits.length * 8).toBe(131_072);
      expect(isBitSet(bits, Number(issued.status.statusListIndex))).toBe(true);
      expect((await identity.verify({ credential: list })).verified).toBe(true);
      expect(
        (await identity.verify({ jwt: (await identity.statusListCredential(listId, 'jwt')).body as string }))
          .verified,
      ).toBe(true);
    });
  });

  describe('presentations', () => {
    let roleJwt: string;
    let roleCredential: Record<string, unknown>;
    const loader = () => offlineDocumentLoader(async (did) => identity.resolveDid(did));

    beforeAll(async () => {
      const issued = await identity.issueCredential(alice, {
        type: 'PlayerRoleCredential',
        subjectDid: holder.did,
      });
      roleJwt = issued.jwt as string;
      roleCredential = issued.credential;
    });

    async function dataIntegrityPresentation(challenge: string, domain: string, signer = holder) {
      return signedPresentation(
        signer,
        { holder: holder.did, verifiableCredential: [roleCredential] },
        { challenge, domain, documentLoader: loader() },
      );
    }

    it('accepts a Data Integrity presentation bound to the challenge and domain, granting the role permissions', async () => {
      const presentation = await dataIntegrityPresentation('c-123', 'game.example.com');
      const result = await identity.verify({
        presentation,
        challenge: 'c-123',
        domain: 'game.example.com',
        requiredPermissions: ['transfers:write'],
      });
      expect(result).toMatchObject({
        verified: true,
        kind: 'presentation',
        subject: holder.did,
        issuer: 'did:web:localhost%3A3000',
      });
      expect(result.checks.map((entry) => entry.name)).toEqual([
        'format',
        'signature',
        'issuer',
        'validity',
        'status',
        'holder-binding',
        'permissions',
      ]);
    });

    it('rejects a replayed presentation, one for another domain, and one signed by someone else (holder-binding)', async () => {
      const presentation = await dataIntegrityPresentation('c-123', 'game.example.com');
      expect(
        failedChecks(await identity.verify({ presentation, challenge: 'c-999', domain: 'game.example.com' })),
      ).toEqual(['holder-binding']);
      expect(
        failedChecks(
          await identity.verify({ presentation, challenge: 'c-123', domain: 'other.example.com' }),
        ),
      ).toEqual(['holder-binding']);
      expect(failedChecks(await identity.verify({ presentation }))).toEqual(['holder-binding']);
      const stolen = await dataIntegrityPresentation('c-123', 'game.example.com', await newTestKey());
      const result = await identity.verify({
        presentation: stolen,
        challenge: 'c-123',
        requiredPermissions: ['assets:read'],
      });
      expect(failedChecks(result)).toEqual(['holder-binding', 'permissions']);
    });

    it('accepts a vp+jwt with an enveloped vc+jwt, and asks for permissions the role lacks', async () => {
      const vp = await holder.signJws(
        {
          '@context': ['https://www.w3.org/ns/credentials/v2'],
          type: ['VerifiablePresentation'],
          holder: holder.did,
          verifiableCredential: [
            {
              '@context': ['https://www.w3.org/ns/credentials/v2'],
              type: 'EnvelopedVerifiableCredential',
              id: `data:application/vc+jwt,${roleJwt}`,
            },
          ],
          nonce: 'n-1',
          aud: 'game.example.com',
        },
        { typ: 'vp+jwt', kid: holder.methodId },
      );
      const ok = await identity.verify({
        presentation: vp,
        challenge: 'n-1',
        domain: 'game.example.com',
        requiredPermissions: ['assets:write'],
      });
      expect(ok.verified, JSON.stringify(ok.checks)).toBe(true);
      const lacking = await identity.verify({
        jwt: vp,
        challenge: 'n-1',
        requiredPermissions: ['prices:write'],
      });
      expect(failedChecks(lacking)).toEqual(['permissions']);
      expect(check(lacking, 'permissions')?.detail).toBe('Not granted: prices:write.');
    });
  });

  describe('interoperability', () => {
    it('verifies a JWT-VC issued by did-jwt-vc with a did:key issuer', async () => {
      const key = await newTestKey();
      const jwt = await createVerifiableCredentialJwt(
        {
          sub: aliceDid,
          nbf: Math.floor(Date.now() / 1000) - 10,
          vc: {
            '@context': ['https://www.w3.org/2018/credentials/v1'],
            type: ['VerifiableCredential'],
            credentialSubject: {
              degree: { type: 'BachelorDegree', name: 'Baccalauréat en musiques numériques' },
            },
          },
        },
        { did: key.did, signer: EdDSASigner(key.secretKey), alg: 'EdDSA' },
      );
      const result = await identity.verify({ jwt });
      expect(result).toMatchObject({ verified: true, issuer: key.did, subject: aliceDid });
      const tampered = `${jwt.split('.')[0]}.${jwt.split('.')[1]}.${Buffer.alloc(64).toString('base64url')}`;
      expect(failedChecks(await identity.verify({ jwt: tampered }))).toEqual(['signature', 'issuer']);
    });

    it('verifies a Data Integrity credential issued by @digitalbazaar/vc with a did:key issuer', async () => {
      const key = await newTestKey();
      const credential = await vc.issue({
        credential: {
          '@context': [
            'https://www.w3.org/ns/credentials/v2',
            'https://www.w3.org/ns/credentials/examples/v2',
          ],
          type: ['VerifiableCredential', 'ExampleAlumniCredential'],
          issuer: key.did,
          validFrom: '2023-07-01T19:23:24Z',
          credentialSubject: { id: aliceDid, alumniOf: { name: 'Example University' } },
        },
        suite: new DataIntegrityProof({
          signer: (await key.multikey()).signer(),
          cryptosuite: eddsaRdfc2022,
        }),
        documentLoader: offlineDocumentLoader(async (did) => identity.resolveDid(did)),
      });
      expect(await identity.verify({ credential })).toMatchObject({ verified: true, issuer: key.did });
    });

    it('verifies the signatures of the official eddsa-rdfc-2022 and eddsa-jcs-2022 vectors (their issuers are not the signing DID)', async () => {
      for (const file of [
        'eddsa-rdfc-2022/signedDataInt.json',
        'eddsa-rdfc-2022/employ/signedDataInt.json',
      ]) {
        const vector = readConformanceJson(`vc/vc-di-eddsa-TestVectors/${file}`);
        const result = await identity.verify({ credential: vector });
        expect(check(result, 'format')?.passed, file).toBe(true);
        expect(check(result, 'signature')?.passed, file).toBe(true);
        expect(failedChecks(result), file).toEqual(['issuer']);
      }
      const proofSet = readConformanceJson('vc/vc-di-eddsa-TestVectors/proof-set-chain/signedProofSet1.json');
      expect(check(await identity.verify({ credential: proofSet }), 'signature')?.passed).toBe(true);
      // 19.2: eddsa-jcs-2022 (the JSON as is, with its known contexts) verifies too.
      const jcs = await identity.verify({
        credential: readConformanceJson('vc/vc-di-eddsa-TestVectors/eddsa-jcs-2022/signedJCS.json'),
      });
      expect(check(jcs, 'signature')?.passed).toBe(true);
      expect(failedChecks(jcs)).toEqual(['issuer']);
    });
  });

  describe('VC Data Model 2.0 test-suite inputs through verify', () => {
    const inputs = vcdm2SuiteInputs();

    it('accepts every -ok credential once signed as a vc+jwt, and rejects every -fail one on format', async () => {
      const key = await newTestKey();
      const outcomes = { accepted: 0, verified: 0, rejected: 0 };
      for (const input of inputs.filter((candidate) => candidate.kind === 'credential')) {
        const document = structuredClone(input.document);
        // The suite's issuer sets the issuer: keep an issuer object's other members.
        const issuerObject =
          typeof document.issuer === 'object' && document.issuer !== null
            ? (document.issuer as Record<string, unknown>)
            : null;
        if (issuerObject) {
          if (input.verdict === 'ok' || !('id' in issuerObject)) issuerObject.id = key.did;
        } else if (!('issuer' in document) || (input.verdict === 'ok' && typeof document.issuer === 'string'))
          document.issuer = key.did;
        const result = await identity.verify({
          jwt: await key.signJws(document, { typ: 'vc+jwt', kid: key.methodId }),
        });
        if (input.verdict === 'ok') {
          // Well-formed, yet some inputs cannot verify today: a status entry of a type this service
          // cannot read (fails `status`), a validFrom in 4023 or a validUntil in 2023 (`validity`).
          const failed = failedChecks(result);
          expect(
            failed.filter((name) => name !== 'status' && name !== 'validity'),
            `${input.file}: ${JSON.stringify(result.checks)}`,
          ).toEqual([]);
          if (failed.includes('status'))
            expect(check(result, 'status')?.detail, input.file).toMatch(/not supported/);
          if (failed.includes('validity'))
            expect(check(result, 'validity')?.detail, input.file).toMatch(/Not valid yet|Expired/);
          if (failed.length === 0) outcomes.verified++;
          outcomes.accepted++;
        } else {
          expect(check(result, 'format')?.passed, input.file).toBe(false);
          outcomes.rejected++;
        }
      }
      expect(outcomes).toEqual({ accepted: 54, verified: 48, rejected: 41 });
    });

    it('answers every presentation input with the expected format verdict', async () => {
      for (const input of inputs.filter((candidate) => candidate.kind === 'presentation')) {
        const result = await identity.verify({ presentation: input.document, challenge: 'x' });
        // 13.1: a Data Integrity presentation with an inline context is refused whatever the suite
        // says (its JSON may not mean what its signed RDF does); two -ok inputs have one.
        const inline = [input.document['@context'] ?? []].flat().some((item) => typeof item !== 'string');
        if (inline) {
          expect(check(result, 'format')?.detail, input.file).toMatch(/inline context/);
          continue;
        }
        const expected = input.verdict === 'ok' || input.verdict === 'unspecified';
        expect(check(result, 'format')?.passed, `${input.file}: ${check(result, 'format')?.detail}`).toBe(
          expected,
        );
      }
    });
  });
});

// The identity operations through the real HTTP API with real tokens and API keys (every response
// checked against the contract), and the service's credentials verified by independent libraries
// that resolve its did:web over HTTP: did-jwt (+ did-resolver) for the JWT, @digitalbazaar/vc for
// the Data Integrity proof, with the revocation status read from the published status list.
import { gunzipSync } from 'node:zlib';
import { contexts as credentialsContexts } from '@digitalbazaar/credentials-context';
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import { contexts as dataIntegrityContexts } from '@digitalbazaar/data-integrity-context';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import { contexts as multikeyContexts } from '@digitalbazaar/multikey-context';
import * as vc from '@digitalbazaar/vc';
import { verifyJWS } from 'did-jwt';
import { type DIDDocument, type DIDResolutionResult, Resolver } from 'did-resolver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { readConformanceJson } from '../../unit/identity/conformance.ts';
import { newTestKey } from './test-keys.ts';

const METADATA = { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' };

/** A did:web resolver for did-resolver that fetches the document over HTTP (http: for a loopback host). */
function webResolver() {
  return {
    async web(did: string): Promise<DIDResolutionResult> {
      const host = decodeURIComponent(did.slice('did:web:'.length).split(':')[0]);
      const scheme = /^(127\.0\.0\.1|localhost)(:\d+)?$/.test(host) ? 'http' : 'https';
      const response = await fetch(`${scheme}://${host}/.well-known/did.json`);
      return {
        didDocument: (await response.json()) as DIDDocument,
        didDocumentMetadata: {},
        didResolutionMetadata: { contentType: 'application/did+json' },
      };
    },
  };
}

/** A JSON-LD loader for the independent verifier: package contexts, DID documents over HTTP. */
function httpDocumentLoader(resolver: Resolver) {
  const contexts = new Map<string, unknown>([
    ...credentialsContexts,
    ...dataIntegrityContexts,
    ...multikeyContexts,
  ]);
  return async (url: string) => {
    if (contexts.has(url)) return { contextUrl: null, documentUrl: url, document: contexts.get(url) };
    if (url.startsWith('did:')) {
      const { didDocument } = await resolver.resolve(url.split('#')[0]);
      const method = didDocument?.verificationMethod?.find((candidate) => candidate.id === url);
      const document = method
        ? { '@context': 'https://w3id.org/security/multikey/v1', ...method }
        : didDocument;
      return { contextUrl: null, documentUrl: url, document };
    }
    throw new Error(`unexpected document ${url}`);
  };
}

describe.each(DB_KINDS)('identity over HTTP on %s', (kind) => {
  let t: TestApp;
  let alice: HttpUser;
  let bob: HttpUser;
  let aliceDid: string;
  let nftId: string;
  const resolver = new Resolver(webResolver());

  beforeAll(async () => {
    t = await startTestApp(kind);
    alice = await httpUser(t);
    bob = await httpUser(t);
    const studio = await httpUser(t, 'studio');
    expect(
      (
        await t.http('POST', '/api/v1/collections', {
          body: { id: 'dawn-quest', name: 'Dawn Quest' },
          headers: studio.headers,
        })
      ).status,
    ).toBe(201);
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Sword of Dawn', metadata: METADATA },
      headers: { ...alice.headers, 'idempotency-key': 'nft-1' },
    });
    expect(nft.status).toBe(201);
    nftId = nft.body.id;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('creates a DID for the caller and resolves it publicly', async () => {
    const created = await t.http('POST', '/identity/create', { body: {}, headers: alice.headers });
    expect(created.status).toBe(201);
    aliceDid = created.body.did;
    expect(created.headers.get('location')).toBe(`/identity/dids/${encodeURIComponent(aliceDid)}`);
    const resolved = await t.http('GET', created.headers.get('location') as string);
    expect(resolved.status).toBe(200);
    expect(resolved.headers.get('content-type')).toMatch(/^application\/did\+json/);
    expect(resolved.body).toEqual(created.body.didDocument);
    expect((await t.http('GET', `/identity/dids/${aliceDid}`)).body).toEqual(created.body.didDocument);
  });

  it('needs a token and an API key to create a DID', async () => {
    expect((await t.http('POST', '/identity/create', { body: {} })).status).toBe(401);
  });

  it('serves its did:web document, also through DID resolution', async () => {
    const document = await t.http('GET', '/.well-known/did.json');
    expect(document.status).toBe(200);
    const did = `did:web:${new URL(t.baseUrl).host.replace(':', '%3A')}`;
    expect(document.body.id).toBe(did);
    expect((await t.http('GET', `/identity/dids/${encodeURIComponent(did)}`)).body).toEqual(document.body);
  });

  it('answers bad DIDs with 400 and foreign did:web with 404', async () => {
    const cases: [string, number, string][] = [
      ['did:ion:EiClkZMDxPKqC9c', 400, '/problems/did-method-not-supported'],
      ['did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme', 400, '/problems/unsupported-key-type'],
      ['did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2do', 400, '/problems/invalid-did'],
      ['did:web:example.com', 404, '/problems/not-found'],
    ];
    for (const [did, status, type] of cases) {
      const response = await t.http('GET', `/identity/dids/${encodeURIComponent(did)}`);
      expect([did, response.status, response.body.type]).toEqual([did, status, type]);
    }
  });

  it('create -> issue -> verify (independently too) -> revoke -> verify again', async () => {
    const issued = await t.http('POST', '/identity/issue_credential', {
      body: { type: 'AssetOwnershipCredential', subjectDid: aliceDid, wallet: alice.wallet, assetId: nftId },
      headers: alice.headers,
    });
    expect(issued.status).toBe(201);
    expect(issued.headers.get('cache-control')).toBe('no-store');
    const { jwt, credential, id } = issued.body;

    // Independent JWT check: did-resolver resolves the issuer over HTTP, did-jwt checks the signature.
    const kid = JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString()).kid as string;
    const { didDocument } = await resolver.resolve(credential.issuer);
    expect(verifyJWS(jwt, didDocument?.verificationMethod ?? []).id).toBe(kid);
    expect(didDocument?.assertionMethod).toContain(kid);

    // Independent Data Integrity check, with the status read from the published list.
    let statusChecked = false;
    const independent = await vc.verifyCredential({
      credential,
      suite: new DataIntegrityProof({ cryptosuite: eddsaRdfc2022 }),
      documentLoader: httpDocumentLoader(resolver),
      async checkStatus({ credential: checked }: any) {
        const entry = checked.credentialStatus;
        const response = await fetch(entry.statusListCredential, { headers: { accept: 'application/json' } });
        const list = (await response.json()) as { credentialSubject: { encodedList: string } };
        const bits = gunzipSync(Buffer.from(list.credentialSubject.encodedList.slice(1), 'base64url'));
        const index = Number(entry.statusListIndex);
        statusChecked = true;
        return { verified: (bits[index >> 3] & (0x80 >> (index & 7))) === 0 };
      },
    } as never);
    expect(independent.verified, JSON.stringify(independent.error)).toBe(true);
    expect(statusChecked).toBe(true);

    for (const body of [{ jwt }, { credential }]) {
      const verified = await t.http('POST', '/identity/verify', { body, headers: bob.headers });
      expect(verified.status).toBe(200);
      expect(verified.body).toMatchObject({ verified: true, kind: 'credential', subject: aliceDid });
    }

    expect(
      (await t.http('POST', `/identity/credentials/${id}/revoke`, { body: {}, headers: bob.headers })).status,
    ).toBe(404);
    const revoked = await t.http('POST', `/identity/credentials/${id}/revoke`, {
      body: {},
      headers: alice.headers,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id, status: 'revoked' });

    for (const body of [{ jwt }, { credential }]) {
      const verified = await t.http('POST', '/identity/verify', { body, headers: bob.headers });
      expect(verified.body.verified).toBe(false);
      expect(verified.body.checks.find((entry: { name: string }) => entry.name === 'status')).toMatchObject({
        passed: false,
      });
    }
  });

  it('serves the status list as a vc+jwt by default and as JSON-LD on request', async () => {
    const issued = await t.http('POST', '/identity/issue_credential', {
      body: { type: 'PlayerRoleCredential', subjectDid: aliceDid, formats: ['vc+jwt'] },
      headers: alice.headers,
    });
    expect(issued.status).toBe(201);
    expect(issued.body.credential).not.toHaveProperty('proof');
    const path = new URL(issued.body.status.statusListCredential).pathname;
    const asJwt = await t.http('GET', path);
    expect(asJwt.status).toBe(200);
    expect(asJwt.headers.get('content-type')).toMatch(/^application\/vc\+jwt/);
    expect(asJwt.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(asJwt.text).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const asJson = await t.http('GET', path, { headers: { accept: 'application/json' } });
    expect(asJson.body.type).toEqual(['VerifiableCredential', 'BitstringStatusListCredential']);
    const verified = await t.http('POST', '/identity/verify', {
      body: { jwt: asJwt.text },
      headers: bob.headers,
    });
    expect(verified.body.verified).toBe(true);
    expect((await t.http('GET', '/identity/status-lists/sl_01JD3ZA0B1C2D3E4F5G6H7J8K9')).status).toBe(404);
  });

  it('19: verifies enveloped presentations, ecdsa-rdfc-2019 credentials and advisory holder binding over HTTP', async () => {
    const fixtures = readConformanceJson('vc/vcdm2-test-suite-fixtures/fixtures.json');
    const presentation = {
      '@context': 'https://www.w3.org/ns/credentials/v2',
      type: 'EnvelopedVerifiablePresentation',
      id: `data:application/jwt,${fixtures.vp_jwt}`,
    };
    const bound = await t.http('POST', '/identity/verify', {
      body: { presentation, challenge: fixtures.challenge },
      headers: bob.headers,
    });
    expect(bound.status).toBe(200);
    expect(bound.body).toMatchObject({ verified: true, kind: 'presentation' });
    const unbound = await t.http('POST', '/identity/verify', {
      body: { presentation, requiredPermissions: ['assets:read'] },
      headers: bob.headers,
    });
    expect(unbound.body.checks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'holder-binding',
          passed: false,
          advisory: true,
          reason: 'no-challenge',
        }),
        expect.objectContaining({ name: 'permissions', passed: false, reason: 'not-holder-bound' }),
      ]),
    );
    const ecdsa = await t.http('POST', '/identity/verify', {
      body: {
        credential: readConformanceJson(
          'vc/vcdm2.0-REC-examples/22-a-simple-credential--ecdsa-rdfc-2019-1.json',
        ),
      },
      headers: bob.headers,
    });
    expect(ecdsa.body.checks.find((entry: { name: string }) => entry.name === 'signature')).toEqual({
      name: 'signature',
      passed: true,
    });
  });

  it('refuses issuing about someone else, and bad verify requests', async () => {
    const refused = await t.http('POST', '/identity/issue_credential', {
      body: { type: 'PlayerRoleCredential', subjectDid: aliceDid },
      headers: bob.headers,
    });
    expect(refused.status).toBe(403);
    const both = await t.http('POST', '/identity/verify', {
      body: { jwt: 'a.b.c', credential: { '@context': [] } },
      headers: bob.headers,
    });
    expect(both.status).toBe(400);
    const garbage = await t.http('POST', '/identity/verify', {
      body: { jwt: 'a.b.c' },
      headers: bob.headers,
    });
    expect(garbage.status).toBe(200);
    expect(garbage.body).toMatchObject({ verified: false, checks: [{ name: 'format', passed: false }] });
  });

  it("13.3: lists credentials (own; an admin any user's) and a role change through the API revokes role credentials", async () => {
    const carol = await httpUser(t);
    const admin = await httpUser(t, 'admin');
    const did = (await t.http('POST', '/identity/create', { body: {}, headers: carol.headers })).body.did;
    const issued = await t.http('POST', '/identity/issue_credential', {
      body: { type: 'PlayerRoleCredential', subjectDid: did, formats: ['vc+jwt'] },
      headers: carol.headers,
    });
    expect(issued.status).toBe(201);
    const own = await t.http('GET', '/identity/credentials?limit=10', { headers: carol.headers });
    expect(own.status).toBe(200);
    expect(own.headers.get('cache-control')).toBe('no-store');
    expect(own.body).toMatchObject({ data: [{ id: issued.body.id, status: 'active' }], next_cursor: null });
    const other = await t.http('GET', `/identity/credentials?user=${carol.userId}`, { headers: bob.headers });
    expect(other.status).toBe(403);

    const changed = await t.http('PUT', `/api/v1/users/${carol.userId}/role`, {
      body: { role: 'studio' },
      headers: admin.headers,
    });
    expect(changed.status).toBe(200);
    const listed = await t.http('GET', `/identity/credentials?user=${carol.userId}`, {
      headers: admin.headers,
    });
    expect(listed.body.data).toMatchObject([{ id: issued.body.id, status: 'revoked' }]);
    const verified = await t.http('POST', '/identity/verify', {
      body: { jwt: issued.body.jwt },
      headers: bob.headers,
    });
    expect(verified.body.checks.find((entry: { name: string }) => entry.name === 'status')).toMatchObject({
      passed: false,
      reason: 'revoked',
    });
  });

  it('13.8: registers a caller-held key over HTTP only with a signed challenge', async () => {
    const key = await newTestKey();
    const bare = await t.http('POST', '/identity/create', {
      body: { publicKeyMultibase: key.publicKeyMultibase },
      headers: bob.headers,
    });
    expect(bare.status).toBe(400);
    const issued = await t.http('POST', '/identity/create/challenge', {
      body: { publicKeyMultibase: key.publicKeyMultibase },
      headers: bob.headers,
    });
    expect(issued.status).toBe(201);
    const { challenge } = issued.body;
    const wrong = await t.http('POST', '/identity/create', {
      body: {
        publicKeyMultibase: key.publicKeyMultibase,
        challenge,
        signature: (await newTestKey()).signText(challenge),
      },
      headers: bob.headers,
    });
    expect([wrong.status, wrong.body.type]).toEqual([403, '/problems/key-possession-not-proven']);
    const created = await t.http('POST', '/identity/create', {
      body: { publicKeyMultibase: key.publicKeyMultibase, challenge, signature: key.signText(challenge) },
      headers: bob.headers,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ did: key.did, keyCustody: 'caller' });
  });
});

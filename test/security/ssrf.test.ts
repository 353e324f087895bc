// OWASP API7 (server side request forgery) and API10 (unsafe consumption of APIs): the service never
// fetches a URL a caller chose. A canary HTTP server on 127.0.0.1 (the address an attacker would aim
// at) is named in every place a URL can be sent: NFT metadata, redirect URIs, did:web DIDs, JSON-LD
// contexts, status lists, JWT key URLs and OAuth request_uri. It must never see a connection.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { type HttpUser, httpUser } from '../helpers/ledger-fixtures.ts';

const kind = DB_KINDS[0];

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe(`no outbound requests on ${kind}`, () => {
  let t: TestApp;
  let canary: Server;
  let canaryUrl: string;
  let canaryDid: string;
  let connections = 0;
  let player: HttpUser;

  beforeAll(async () => {
    canary = createServer((_request, response) => {
      response.end('{}');
    });
    canary.on('connection', () => {
      connections += 1;
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    const port = (canary.address() as { port: number }).port;
    canaryUrl = `http://127.0.0.1:${port}`;
    canaryDid = `did:web:127.0.0.1%3A${port}`;
    // The canary does notice a connection; then the count starts from zero.
    await fetch(canaryUrl);
    expect(connections).toBe(1);
    connections = 0;
    t = await startTestApp(kind);
    const studio = await httpUser(t, 'studio');
    player = await httpUser(t);
    const collection = await t.http('POST', '/api/v1/collections', {
      body: { id: 'dawn-quest', name: 'Dawn Quest' },
      headers: studio.headers,
    });
    expect(collection.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    canary?.close();
  });

  /** Lets any fetch the service might have started in the background reach the canary first. */
  async function expectNoConnection(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(connections).toBe(0);
  }

  it('stores an NFT image URL pointing at 127.0.0.1 as given, without fetching it', async () => {
    const image = `${canaryUrl}/admin/secret.png`;
    const created = await t.http('POST', '/api/v1/nft/create', {
      body: {
        name: 'Canary',
        metadata: { image, attributes: [{ trait_type: 'origin', value: `${canaryUrl}/x` }], creator: 'me' },
      },
      headers: player.headers,
    });
    expect(created.status).toBe(201);
    const read = await t.http('GET', `/assets/${created.body.id}`, { headers: player.headers });
    expect(read.body.metadata.image).toBe(image);
    await expectNoConnection();
  });

  it('stores a loopback redirect URI without calling it', async () => {
    const app = await t.http('POST', '/api/v1/applications', {
      body: { name: 'Canary app', redirectUris: [`${canaryUrl}/cb`] },
      headers: player.headers,
    });
    expect(app.status).toBe(201);
    await expectNoConnection();
  });

  it('does not resolve a did:web of another host', async () => {
    const response = await t.http('GET', `/identity/dids/${encodeURIComponent(canaryDid)}`);
    expect([response.status, response.body.type]).toEqual([404, '/problems/not-found']);
    await expectNoConnection();
  });

  it('verifies credentials naming foreign issuers, contexts, status lists and key URLs without fetching any', async () => {
    const credential = {
      '@context': ['https://www.w3.org/ns/credentials/v2', `${canaryUrl}/context.jsonld`],
      type: ['VerifiableCredential'],
      issuer: canaryDid,
      validFrom: '2026-01-01T00:00:00Z',
      credentialSubject: { id: 'did:example:subject' },
      credentialStatus: {
        id: `${canaryUrl}/status/1#5`,
        type: 'BitstringStatusListEntry',
        statusPurpose: 'revocation',
        statusListIndex: '5',
        statusListCredential: `${canaryUrl}/status/1`,
      },
      proof: {
        type: 'DataIntegrityProof',
        cryptosuite: 'eddsa-rdfc-2022',
        verificationMethod: `${canaryDid}#key-1`,
        proofPurpose: 'assertionMethod',
        proofValue:
          'z3FXQjecWufY46yg5abdVZsXqLhxhueuSoZgNSARiKBk9czhSePTFehP8c3PGfb6a22gkfUKKiCw4jPLTgrdHGtxh',
      },
    };
    const header = {
      alg: 'EdDSA',
      typ: 'vc+jwt',
      kid: `${canaryDid}#key-1`,
      jku: `${canaryUrl}/jwks`,
      x5u: `${canaryUrl}/cert`,
    };
    const jwt = `${b64(header)}.${b64({ ...credential, proof: undefined })}.${Buffer.alloc(64).toString('base64url')}`;
    for (const body of [{ credential }, { jwt }]) {
      const response = await t.http('POST', '/identity/verify', { body, headers: player.headers });
      expect(response.status, JSON.stringify(response.body)).toBeLessThan(500);
      if (response.status === 200) expect(response.body.verified).toBe(false);
    }
    await expectNoConnection();
  });

  it('ignores an OAuth request_uri and never fetches it', async () => {
    const url = new URL('/authorize', t.baseUrl);
    url.search = new URLSearchParams({
      client_id: 'gats-explorer',
      response_type: 'code',
      request_uri: `${canaryUrl}/request.jwt`,
    }).toString();
    const response = await fetch(url, { redirect: 'manual' });
    expect(response.status).toBeLessThan(500);
    await expectNoConnection();
  });
});

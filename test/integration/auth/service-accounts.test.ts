// Service accounts (issue 18): the client credentials grant driven by a real OAuth client
// (openid-client 6) with each client authentication method, then the API with the token it got.
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientSecret } from '../../../src/db/entities/ClientSecret.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import {
  authorizeInBrowser,
  Browser,
  bearer,
  checkedFetch,
  createApiKey,
  credentials,
  login,
  newSession,
  register,
  type Session,
} from './auth-helpers.ts';

/** openid-client's error for a 401 `invalid_client` (a challenge error when Basic auth was used). */
function isInvalidClient(error: unknown): boolean {
  const { status, error: code } = error as { status?: number; error?: string };
  return status === 401 || code === 'invalid_client';
}

const METADATA = { image: 'https://cdn.example-game.com/x.png', attributes: [], creator: 'tests' };

describe.each(DB_KINDS)('service accounts on %s', (kind) => {
  let t: TestApp;
  let oracleOwner: Session;
  let admin: HttpUser;
  let assetId: string;

  async function oauthClient(clientId: string, auth: client.ClientAuth): Promise<client.Configuration> {
    const config = await client.discovery(new URL(t.baseUrl), clientId, undefined, auth, {
      execute: [client.allowInsecureRequests],
      [client.customFetch]: checkedFetch,
    });
    config[client.customFetch] = checkedFetch;
    return config;
  }

  async function createServiceAccount(owner: { accessToken: string }, body: Record<string, unknown>) {
    return t.http('POST', '/api/v1/service-accounts', { body, headers: bearer(owner.accessToken) });
  }

  /** A token by the client credentials grant, an API key made with it: the account's own credentials. */
  async function serviceCredentials(config: client.Configuration, scope: string) {
    const tokens = await client.clientCredentialsGrant(config, { scope });
    const key = await createApiKey(t, tokens.access_token, 'service key');
    return { tokens, headers: credentials(tokens.access_token, key.key) };
  }

  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_RATE_LIMIT_REQUESTS: '1000', RATE_LIMIT_ACCOUNT_REQUESTS: '1000' });
    oracleOwner = await newSession(t);
    admin = await httpUser(t, 'admin');
    const promote = await t.http('PUT', `/api/v1/users/${oracleOwner.userId}/role`, {
      body: { role: 'oracle' },
      headers: admin.headers,
    });
    expect(promote.status, promote.text).toBe(200);
    oracleOwner = { ...oracleOwner, accessToken: (await login(t, oracleOwner.username)).access_token };
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name: 'Priced Sword', metadata: METADATA },
      headers: credentials(oracleOwner.accessToken, oracleOwner.apiKey),
    });
    expect(nft.status, nft.text).toBe(201);
    assetId = nft.body.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('publishes the grant and the authentication methods in discovery', async () => {
    const discovery = await t.http('GET', '/.well-known/openid-configuration');
    expect(discovery.body.grant_types_supported).toContain('client_credentials');
    expect(discovery.body.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post', 'private_key_jwt']),
    );
  });

  it('client_secret_basic: an oracle service account gets a token, its own key and wallet, and posts a price', async () => {
    const created = await createServiceAccount(oracleOwner, {
      name: 'Price feed',
      role: 'oracle',
      scopes: ['assets:read', 'prices:write'],
    });
    expect(created.status, created.text).toBe(201);
    const account = created.body;
    expect(account).toMatchObject({ role: 'oracle', tokenEndpointAuthMethod: 'client_secret_basic' });
    expect(account.wallets).toHaveLength(1);
    // Shown once, stored as a digest only.
    const stored = await t.app.orm.em.fork().find(ClientSecret, { application: account.id });
    expect(stored.map((row) => row.secretHash)).not.toContain(account.clientSecret);
    const listed = await t.http('GET', '/api/v1/service-accounts', {
      headers: bearer(oracleOwner.accessToken),
    });
    expect(listed.text).not.toContain(account.clientSecret);
    expect(listed.body.data.map((item: { id: string }) => item.id)).toContain(account.id);

    const config = await oauthClient(account.id, client.ClientSecretBasic(account.clientSecret));
    const { tokens, headers } = await serviceCredentials(config, 'assets:read prices:write');
    expect(tokens.refresh_token).toBeUndefined();
    // As short-lived as users' access tokens (ACCESS_TOKEN_TTL_SECONDS, 900 by default).
    expect(tokens.expires_in).toBe(900);
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: account.id,
      user_id: account.id,
      client_id: account.id,
      role: 'oracle',
      scope: 'assets:read prices:write',
      aud: `${t.baseUrl}/api`,
    });
    const me = await t.http('GET', '/api/v1/me', { headers });
    expect(me.body).toMatchObject({ id: account.id, role: 'oracle', wallets: account.wallets });
    const price = await t.http('POST', `/api/v1/price/${assetId}`, {
      body: { price: '12.5', currency: 'USD', source: 'service-account' },
      headers,
    });
    expect(price.status, price.text).toBe(201);
  });

  it('client_secret_post: a player service account cannot exceed its role', async () => {
    const created = await createServiceAccount(oracleOwner, {
      name: 'Game server',
      role: 'player',
      tokenEndpointAuthMethod: 'client_secret_post',
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.scopes).not.toContain('prices:write');
    const config = await oauthClient(created.body.id, client.ClientSecretPost(created.body.clientSecret));
    // A scope the account was not granted is not in the token.
    const { tokens, headers } = await serviceCredentials(config, 'assets:read prices:write');
    expect(tokens.scope).toBe('assets:read');
    const price = await t.http('POST', `/api/v1/price/${assetId}`, {
      body: { price: '1', currency: 'USD', source: 'service-account' },
      headers,
    });
    expect(price.status).toBe(403);
  });

  it('private_key_jwt: a service account signs its assertion with a registered key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jwk = { ...(await exportJWK(publicKey)), alg: 'Ed25519', kid: 'k1' };
    const created = await createServiceAccount(oracleOwner, {
      name: 'Signed feed',
      role: 'oracle',
      scopes: ['assets:read', 'prices:write'],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwks: { keys: [jwk] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.clientSecret).toBeNull();
    const config = await oauthClient(created.body.id, client.PrivateKeyJwt({ key: privateKey, kid: 'k1' }));
    const { headers } = await serviceCredentials(config, 'assets:read prices:write');
    const price = await t.http('POST', `/api/v1/price/${assetId}`, {
      body: { price: '13', currency: 'USD', source: 'signed-feed' },
      headers,
    });
    expect(price.status, price.text).toBe(201);

    // Another key (not registered) is refused.
    const other = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await oauthClient(
      created.body.id,
      client.PrivateKeyJwt({ key: other.privateKey, kid: 'k1' }),
    );
    await expect(client.clientCredentialsGrant(forged, { scope: 'assets:read' })).rejects.toSatisfy(
      isInvalidClient,
    );
  });

  it('refuses roles above the owner, scopes above the role, private keys and bad callers', async () => {
    const player = await newSession(t);
    const tooHigh = await createServiceAccount(player, { name: 'x', role: 'oracle' });
    expect([tooHigh.status, tooHigh.body.errors?.[0]?.pointer]).toEqual([400, '/body/role']);
    const scope = await createServiceAccount(player, { name: 'x', role: 'player', scopes: ['prices:write'] });
    expect([scope.status, scope.body.errors?.[0]?.pointer]).toEqual([400, '/body/scopes/0']);
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const secretKey = await createServiceAccount(player, {
      name: 'x',
      role: 'player',
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'EdDSA' }] },
    });
    expect(secretKey.status).toBe(400);
    const listed = await t.http('GET', '/api/v1/service-accounts', { headers: bearer(player.accessToken) });
    expect(listed.body.data).toEqual([]);
    // Usernames of service accounts cannot be registered by people.
    const squat = await t.http('POST', '/api/v1/auth/register', {
      body: { username: 'svc_01JD4A7Q2W3E4R5T6Y7V8X9Z0P', password: 'correct horse battery staple' },
    });
    expect(squat.status).toBe(400);
    // A service account does not create service accounts.
    const created = await createServiceAccount(player, { name: 'Bot', role: 'player' });
    const config = await oauthClient(created.body.id, client.ClientSecretBasic(created.body.clientSecret));
    const { tokens } = await serviceCredentials(config, 'assets:read');
    const nested = await createServiceAccount(
      { accessToken: tokens.access_token },
      { name: 'y', role: 'player' },
    );
    expect([nested.status, nested.body.type]).toEqual([403, '/problems/forbidden']);
  });

  it("is capped by its owner's role: demoting the owner demotes the account at once", async () => {
    const owner = await newSession(t);
    const promote = () =>
      t.http('PUT', `/api/v1/users/${owner.userId}/role`, {
        body: { role: 'oracle' },
        headers: admin.headers,
      });
    expect((await promote()).status).toBe(200);
    const ownerToken = (await login(t, owner.username)).access_token;
    const created = await createServiceAccount({ accessToken: ownerToken }, { name: 'Feed', role: 'oracle' });
    expect(created.status, created.text).toBe(201);
    const config = await oauthClient(created.body.id, client.ClientSecretBasic(created.body.clientSecret));
    const { headers } = await serviceCredentials(config, 'assets:read prices:write');
    const post = () =>
      t.http('POST', `/api/v1/price/${assetId}`, {
        body: { price: '2', currency: 'USD', source: 'feed' },
        headers,
      });
    expect((await post()).status).toBe(201);
    const demote = await t.http('PUT', `/api/v1/users/${owner.userId}/role`, {
      body: { role: 'player' },
      headers: admin.headers,
    });
    expect(demote.status).toBe(200);
    const refused = await post();
    // The player role allows no prices:write: the scope is dropped before the role is even checked.
    expect([refused.status, refused.body.type]).toEqual([403, '/problems/insufficient-scope']);
    // A new token carries the capped role too.
    const again = await client.clientCredentialsGrant(config, { scope: 'assets:read' });
    expect(decodeJwt(again.access_token).role).toBe('player');
  });

  it('rotates secrets without downtime; a revoked secret stops at once', async () => {
    const created = await createServiceAccount(oracleOwner, { name: 'Rotating', role: 'player' });
    const id = created.body.id;
    const first = { id: created.body.clientSecrets[0].id, secret: created.body.clientSecret as string };
    const added = await t.http('POST', `/api/v1/service-accounts/${id}/secrets`, {
      headers: bearer(oracleOwner.accessToken),
    });
    expect(added.status, added.text).toBe(201);
    const third = await t.http('POST', `/api/v1/service-accounts/${id}/secrets`, {
      headers: bearer(oracleOwner.accessToken),
    });
    expect([third.status, third.body.type]).toEqual([409, '/problems/quota-exceeded']);

    const withFirst = await oauthClient(id, client.ClientSecretBasic(first.secret));
    const withSecond = await oauthClient(id, client.ClientSecretPost(added.body.secret));
    await client.clientCredentialsGrant(withFirst, { scope: 'assets:read' });
    await client.clientCredentialsGrant(withSecond, { scope: 'assets:read' });

    const revoked = await t.http('DELETE', `/api/v1/service-accounts/${id}/secrets/${first.id}`, {
      headers: bearer(oracleOwner.accessToken),
    });
    expect(revoked.status).toBe(204);
    await expect(client.clientCredentialsGrant(withFirst, { scope: 'assets:read' })).rejects.toSatisfy(
      isInvalidClient,
    );
    await client.clientCredentialsGrant(withSecond, { scope: 'assets:read' });
    const account = await t.http('GET', `/api/v1/service-accounts/${id}`, {
      headers: bearer(oracleOwner.accessToken),
    });
    expect(account.body.clientSecrets.map((secret: { id: string }) => secret.id)).toEqual([added.body.id]);
  });

  it('a deleted service account stops working at once: token endpoint, tokens and keys', async () => {
    const created = await createServiceAccount(oracleOwner, { name: 'Doomed', role: 'player' });
    const config = await oauthClient(created.body.id, client.ClientSecretBasic(created.body.clientSecret));
    const { headers } = await serviceCredentials(config, 'assets:read');
    expect((await t.http('GET', '/api/v1/me', { headers })).status).toBe(200);
    const deleted = await t.http('DELETE', `/api/v1/service-accounts/${created.body.id}`, {
      headers: bearer(oracleOwner.accessToken),
    });
    expect(deleted.status).toBe(204);
    expect((await t.http('GET', '/api/v1/me', { headers })).status).toBe(401);
    await expect(client.clientCredentialsGrant(config, { scope: 'assets:read' })).rejects.toSatisfy(
      isInvalidClient,
    );
    const gone = await t.http('GET', `/api/v1/service-accounts/${created.body.id}`, {
      headers: bearer(oracleOwner.accessToken),
    });
    expect(gone.status).toBe(404);
  });

  it("a deleted application's access tokens stop working at once (not when they expire)", async () => {
    const owner = await newSession(t);
    const redirectUri = 'http://127.0.0.1:9/callback';
    const app = await t.http('POST', '/api/v1/applications', {
      body: { name: 'Companion', redirectUris: [redirectUri] },
      headers: bearer(owner.accessToken),
    });
    const config = await oauthClient(app.body.clientId, client.None());
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'assets:read',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const user = await register(t);
    const callback = await authorizeInBrowser(new Browser(t), url, user.username);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier });
    const key = await createApiKey(t, (await login(t, user.username)).access_token);
    const headers = credentials(tokens.access_token, key.key);
    expect((await t.http('GET', '/api/v1/me', { headers })).status).toBe(200);
    const deleted = await t.http('DELETE', `/api/v1/applications/${app.body.clientId}`, {
      headers: bearer(owner.accessToken),
    });
    expect(deleted.status).toBe(204);
    const refused = await t.http('GET', '/api/v1/me', { headers });
    expect([refused.status, refused.body.type]).toEqual([401, '/problems/invalid-token']);
  });
});

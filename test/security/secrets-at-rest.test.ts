// OWASP API2 (broken authentication) and API8: what a reader of the database (a stolen backup, an
// injection) would find. Every table is dumped after a user registered, logged in, refreshed, created
// an API key, a confidential client and a held DID key; no usable secret may appear in it.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secret-box.ts';
import { ApiKey } from '../../src/db/entities/ApiKey.ts';
import { Application } from '../../src/db/entities/Application.ts';
import { Identity } from '../../src/db/entities/Identity.ts';
import { SigningKey } from '../../src/db/entities/SigningKey.ts';
import { User } from '../../src/db/entities/User.ts';
import { startTestApp, TEST_SECRET_KEY, type TestApp } from '../helpers/app.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { bearer, credentials, login, PASSWORD, register } from '../integration/auth/auth-helpers.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe.each(DB_KINDS)('secrets at rest on %s', (kind) => {
  let t: TestApp;
  let userId: string;
  let apiKey: { id: string; key: string };
  let clientSecret: string;
  let clientId: string;
  let rotatedRefreshToken: string;
  const secrets: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp(kind, {}, { servicePasswords: true });
    const user = await register(t);
    userId = user.id;
    const tokens = await login(t, user.username);
    const key = await t.http('POST', '/api/v1/api-keys', {
      body: { name: 'at rest' },
      headers: bearer(tokens.access_token),
    });
    apiKey = key.body;
    const app = await t.http('POST', '/api/v1/applications', {
      body: { name: 'Server app', redirectUris: ['https://game.example.com/cb'], type: 'confidential' },
      headers: bearer(tokens.access_token),
    });
    clientSecret = app.body.clientSecret;
    clientId = app.body.clientId;
    const identity = await t.http('POST', '/identity/create', {
      body: {},
      headers: credentials(tokens.access_token, apiKey.key),
    });
    expect(identity.status).toBe(201);
    const refreshed = await t.http('POST', '/token', {
      form: {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: 'gats-first-party',
      },
    });
    expect(refreshed.status).toBe(200);
    rotatedRefreshToken = refreshed.body.refresh_token;
    Object.assign(secrets, {
      password: PASSWORD,
      'API key': apiKey.key,
      'client secret': clientSecret,
      'refresh token': tokens.refresh_token,
      'rotated refresh token': rotatedRefreshToken,
      'access token': tokens.access_token,
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Every row of every table of the app's schema, as text. */
  async function dumpDatabase(): Promise<string> {
    const connection = t.app.orm.em.getConnection();
    const all = t.app.orm.getMetadata().getAll() as unknown;
    const metas = (all instanceof Map ? [...all.values()] : Object.values(all as object)) as {
      tableName?: string;
    }[];
    const tables = new Set(metas.map((meta) => meta.tableName));
    const dumps: string[] = [];
    for (const table of tables) {
      if (!table) continue;
      dumps.push(JSON.stringify(await connection.execute(`select * from "${table}"`)));
    }
    return dumps.join('\n');
  }

  it('holds no password, API key, client secret, refresh token or access token anywhere', async () => {
    const dump = await dumpDatabase();
    expect(dump).toContain(userId); // the dump works
    for (const [name, secret] of Object.entries(secrets)) {
      expect(dump.includes(secret), `${name} stored in the database`).toBe(false);
    }
  });

  it('stores passwords as salted scrypt hashes', async () => {
    const user = await t.app.orm.em.fork().findOneOrFail(User, { id: userId });
    expect(user.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  });

  it('stores API keys and client secrets as SHA-256 digests', async () => {
    const em = t.app.orm.em.fork();
    const key = await em.findOneOrFail(ApiKey, { id: apiKey.id });
    expect(key.keyHash).toBe(sha256(apiKey.key));
    expect(key.prefix).toBe(apiKey.key.slice(0, 12));
    const app = await em.findOneOrFail(Application, { clientId });
    expect(app.clientSecretHash).toBe(sha256(clientSecret));
  });

  it('seals token signing keys: the stored private key opens only with SECRET_KEY and its own context', async () => {
    const [row] = await t.app.orm.em.fork().find(SigningKey, { retiredAt: null });
    expect(row.privateJwkEncrypted).toMatch(/^v1\./);
    expect(row.privateJwkEncrypted).not.toContain('"d"');
    const jwk = JSON.parse(
      createSecretBox(TEST_SECRET_KEY).open(row.privateJwkEncrypted, `signing-key:${row.kid}`),
    );
    expect(jwk.d).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(() =>
      createSecretBox(`${TEST_SECRET_KEY}-other`).open(row.privateJwkEncrypted, `signing-key:${row.kid}`),
    ).toThrow();
    expect(() =>
      createSecretBox(TEST_SECRET_KEY).open(row.privateJwkEncrypted, 'signing-key:another'),
    ).toThrow();
  });

  it('seals the private keys of held DIDs', async () => {
    const identities = await t.app.orm.em.fork().find(Identity, { user: userId });
    expect(identities).toHaveLength(1);
    expect(identities[0].encryptedPrivateKey).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('still honours the digested refresh token: the rotated one refreshes, the spent one is refused', async () => {
    const spent = await t.http('POST', '/token', {
      form: {
        grant_type: 'refresh_token',
        refresh_token: secrets['refresh token'],
        client_id: 'gats-first-party',
      },
    });
    expect([spent.status, spent.body.error]).toEqual([400, 'invalid_grant']);
    // Reusing the spent token revoked the family (oidc-provider's rotation rule), the rotated one too.
    const rotated = await t.http('POST', '/token', {
      form: {
        grant_type: 'refresh_token',
        refresh_token: rotatedRefreshToken,
        client_id: 'gats-first-party',
      },
    });
    expect([rotated.status, rotated.body.error]).toEqual([400, 'invalid_grant']);
  });
});

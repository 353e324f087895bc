// Local access-token verification against the RFC vectors and forged tokens: only EdDSA RFC 9068
// tokens from our issuer, for our audience, signed by a published key, unexpired, pass.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { compactVerify, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createTokenVerifier, InvalidTokenError } from '../../../src/auth/token-verifier.ts';

const vectors = JSON.parse(
  readFileSync(new URL('../../vectors/rfc/rfc-vectors.json', import.meta.url), 'utf8'),
);
const ISSUER = 'https://gats.example';
const AUDIENCE = 'https://gats.example/api';

async function newKey(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'EdDSA', use: 'sig' } as JWK };
}

function claims(overrides: Record<string, unknown> = {}) {
  return {
    sub: 'usr_1',
    user_id: 'usr_1',
    role: 'player',
    client_id: 'gats-first-party',
    scope: 'assets:read',
    jti: 'j1',
    ...overrides,
  };
}

describe('access token verifier', () => {
  let signer: Awaited<ReturnType<typeof newKey>>;
  let sign: (options?: {
    claims?: Record<string, unknown>;
    typ?: string;
    aud?: string;
    iss?: string;
    exp?: number | string;
    key?: Awaited<ReturnType<typeof newKey>>;
  }) => Promise<string>;

  beforeAll(async () => {
    signer = await newKey('k1');
    sign = async (options = {}) => {
      const key = options.key ?? signer;
      return new SignJWT(claims(options.claims))
        .setProtectedHeader({ alg: 'EdDSA', typ: options.typ ?? 'at+jwt', kid: key.publicJwk.kid })
        .setIssuer(options.iss ?? ISSUER)
        .setAudience(options.aud ?? AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(options.exp ?? '15m')
        .sign(key.privateKey);
    };
  });

  const verifier = (keys: JWK[], reloadKeys = async () => keys) =>
    createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, publicJwks: keys, reloadKeys });

  it('accepts a well-formed token and returns its claims', async () => {
    const result = await verifier([signer.publicJwk]).verify(await sign());
    expect(result).toMatchObject({
      userId: 'usr_1',
      role: 'player',
      clientId: 'gats-first-party',
      jti: 'j1',
    });
    expect([...result.scope]).toEqual(['assets:read']);
  });

  it('rejects the RFC 7519 §6.1 unsecured JWT (alg none)', async () => {
    await expect(verifier([signer.publicJwk]).verify(vectors.rfc7519_6_1_unsecured_jwt.jwt)).rejects.toThrow(
      InvalidTokenError,
    );
  });

  it('rejects the RFC 7515 A.1 HS256 and A.3 ES256 tokens (algorithms not allowed)', async () => {
    const v = verifier([signer.publicJwk]);
    await expect(v.verify(vectors.rfc7515_A1_hs256.jws)).rejects.toThrow(/accepted algorithm|invalid/);
    await expect(v.verify(vectors.rfc7515_A3_es256.jws)).rejects.toThrow(/accepted algorithm|invalid/);
  });

  it('rejects a token signed by another key, even one claiming a published kid', async () => {
    const other = await newKey('k1');
    await expect(verifier([signer.publicJwk]).verify(await sign({ key: other }))).rejects.toThrow(
      /signature/,
    );
  });

  it('rejects expired tokens, wrong audience, wrong issuer and a typ other than at+jwt', async () => {
    const v = verifier([signer.publicJwk]);
    await expect(v.verify(await sign({ exp: Math.floor(Date.now() / 1000) - 60 }))).rejects.toThrow(
      /expired/,
    );
    await expect(v.verify(await sign({ aud: 'https://elsewhere.example/api' }))).rejects.toThrow(/aud/);
    await expect(v.verify(await sign({ iss: 'https://evil.example' }))).rejects.toThrow(/iss/);
    await expect(v.verify(await sign({ typ: 'JWT' }))).rejects.toThrow(/typ/);
  });

  it('rejects tokens without a user or with an unknown role', async () => {
    const v = verifier([signer.publicJwk]);
    await expect(v.verify(await sign({ claims: { user_id: 'usr_2' } }))).rejects.toThrow(/user/);
    await expect(v.verify(await sign({ claims: { role: 'root' } }))).rejects.toThrow(/role/);
  });

  it('remembers a verified token, and only that exact token, until it expires', async () => {
    const v = verifier([signer.publicJwk]);
    const token = await sign();
    expect(v.remembered(token)).toBeUndefined();
    const claims = await v.verify(token);
    expect(v.remembered(token)).toBe(claims);
    // A forgery that keeps the signature (so the lookup key) but changes the payload is not the token.
    const [header, , signature] = token.split('.');
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, role: 'admin' })).toString('base64url')}.${signature}`;
    expect(v.remembered(forged)).toBeUndefined();
    await expect(v.verify(forged)).rejects.toThrow(InvalidTokenError);
    // ... nor does its failure make the genuine token forgotten.
    expect(v.remembered(token)).toBe(claims);
    expect(v.remembered(token.slice(0, -1))).toBeUndefined();
    // A token that is remembered but has expired is no longer.
    const shortLived = await sign({ exp: Math.floor(Date.now() / 1000) + 6 });
    await v.verify(shortLived);
    expect(v.remembered(shortLived)).toBeDefined();
    // Past exp and the 5 s clock tolerance.
    const later = vi.spyOn(Date, 'now').mockReturnValue(Date.now() + 20_000);
    try {
      expect(v.remembered(shortLived)).toBeUndefined();
    } finally {
      later.mockRestore();
    }
  });

  it('reloads the published keys once when a token names an unknown kid (another instance rotated)', async () => {
    const rotated = await newKey('k2');
    let reloads = 0;
    const v = verifier([signer.publicJwk], async () => {
      reloads += 1;
      return [rotated.publicJwk, signer.publicJwk];
    });
    expect((await v.verify(await sign({ key: rotated }))).userId).toBe('usr_1');
    expect(reloads).toBe(1);
  });
});

describe('RFC vectors the server relies on', () => {
  it('RFC 8037 A.4: the Ed25519 JWS verifies with jose', async () => {
    const vector = vectors.rfc8037_A4_ed25519_jws;
    const { d: _private, ...publicJwk } = vector.jwk;
    const { payload } = await compactVerify(vector.jws, await importJWK(publicJwk, 'EdDSA'));
    expect(new TextDecoder().decode(payload)).toBe(vector.payload_utf8);
  });

  it('RFC 7636 B: S256(code_verifier) is the code_challenge', () => {
    const vector = vectors.rfc7636_appendix_B_pkce_s256;
    expect(createHash('sha256').update(vector.code_verifier).digest('base64url')).toBe(vector.code_challenge);
  });
});

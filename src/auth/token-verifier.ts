// Local verification of access tokens: signature with the public keys held in memory (no database
// access per request), EdDSA only, issuer, audience, expiry, not-before and `typ: at+jwt` (RFC 9068).
// A token signed by a key this instance does not know yet (another instance just rotated) triggers
// one throttled reload of the published keys. A verified token's claims are remembered (bounded, until
// the token expires), so a client that sends the same token on every request pays for one signature
// check, not one per request; a change of keys forgets them all.
import { createLocalJWKSet, errors, type JWK, type JWTPayload, jwtVerify } from 'jose';
import type { Role } from './caller.ts';

export const ACCESS_TOKEN_ALGORITHMS = ['EdDSA'];
const ROLES = new Set<string>(['player', 'studio', 'oracle', 'admin']);
const RELOAD_INTERVAL_MS = 10_000;
const CLOCK_TOLERANCE_SECONDS = 5;
/** Tokens whose verified claims are kept; the least recently used goes first. */
const VERIFIED_CACHE_LIMIT = 10_000;
/**
 * Remembered tokens are found by their last characters (part of the signature) and then compared
 * whole: hashing a whole token, hundreds of characters that arrive as a new string with every request,
 * cost more than all the rest of the lookup.
 */
const LOOKUP_KEY_LENGTH = 32;

export interface AccessTokenClaims {
  userId: string;
  role: Role;
  clientId: string;
  scope: ReadonlySet<string>;
  jti: string;
  exp: number;
}

export class InvalidTokenError extends Error {
  override name = 'InvalidTokenError';
}

export interface TokenVerifier {
  verify(token: string): Promise<AccessTokenClaims>;
  /** The claims of `token` if it was verified before and is still within its lifetime (else undefined). */
  remembered(token: string): AccessTokenClaims | undefined;
  /** Replaces the keys (after this instance loads or rotates them). */
  setKeys(publicJwks: JWK[]): void;
}

export function createTokenVerifier(options: {
  issuer: string;
  audience: string;
  publicJwks: JWK[];
  /** Reads the currently published public keys (from the database). */
  reloadKeys: () => Promise<JWK[]>;
}): TokenVerifier {
  let keySet = createLocalJWKSet({ keys: [] });
  let reloadedAt = 0;
  /** By lookup key (see LOOKUP_KEY_LENGTH): the whole token and its claims. */
  const verified = new Map<string, { token: string; claims: AccessTokenClaims }>();
  const lookupKey = (token: string) =>
    token.length > LOOKUP_KEY_LENGTH ? token.slice(-LOOKUP_KEY_LENGTH) : token;

  /** The claims of a token verified earlier, while it is still within its lifetime. */
  function remembered(token: string): AccessTokenClaims | undefined {
    const key = lookupKey(token);
    const entry = verified.get(key);
    if (entry?.token !== token) return undefined;
    verified.delete(key);
    // The same bound jose applies: expired once now - tolerance reaches exp.
    if (Math.floor(Date.now() / 1000) - CLOCK_TOLERANCE_SECONDS >= entry.claims.exp) return undefined;
    verified.set(key, entry);
    return entry.claims;
  }

  function remember(token: string, claims: AccessTokenClaims): void {
    const key = lookupKey(token);
    // Another token with the same last characters (never two genuine ones in practice) is replaced.
    verified.delete(key);
    if (verified.size >= VERIFIED_CACHE_LIMIT) verified.delete(verified.keys().next().value as string);
    verified.set(key, { token, claims });
  }

  function setKeys(publicJwks: JWK[]): void {
    // A retired or replaced key must stop vouching for the tokens it signed.
    verified.clear();
    // Only access-token keys: an ID token (RS256) is never accepted as an access token.
    keySet = createLocalJWKSet({
      keys: publicJwks.filter((jwk) => ACCESS_TOKEN_ALGORITHMS.includes(jwk.alg ?? '')),
    });
  }
  setKeys(options.publicJwks);

  async function verifySignature(token: string): Promise<JWTPayload> {
    const verifyOptions = {
      issuer: options.issuer,
      audience: options.audience,
      algorithms: ACCESS_TOKEN_ALGORITHMS,
      typ: 'at+jwt',
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id'],
    };
    try {
      return (await jwtVerify(token, keySet, verifyOptions)).payload;
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || Date.now() - reloadedAt < RELOAD_INTERVAL_MS)
        throw error;
      reloadedAt = Date.now();
      setKeys(await options.reloadKeys());
      return (await jwtVerify(token, keySet, verifyOptions)).payload;
    }
  }

  return {
    setKeys,
    remembered,
    async verify(token) {
      const known = remembered(token);
      // The same (read-only) claims object while the token is remembered.
      if (known) return known;
      let payload: JWTPayload;
      try {
        payload = await verifySignature(token);
      } catch (error) {
        throw new InvalidTokenError(describe(error));
      }
      const {
        sub,
        user_id: userId,
        role,
        client_id: clientId,
        scope,
        jti,
        exp,
      } = payload as JWTPayload & Record<string, unknown>;
      if (typeof userId !== 'string' || userId !== sub)
        throw new InvalidTokenError('The access token has no valid user.');
      if (typeof role !== 'string' || !ROLES.has(role))
        throw new InvalidTokenError('The access token has no valid role.');
      if (typeof clientId !== 'string') throw new InvalidTokenError('The access token has no client.');
      if (scope !== undefined && typeof scope !== 'string')
        throw new InvalidTokenError('The access token scope is malformed.');
      const claims: AccessTokenClaims = {
        userId,
        role: role as Role,
        clientId,
        scope: new Set((scope ?? '').split(' ').filter(Boolean)),
        jti: jti as string,
        exp: exp as number,
      };
      remember(token, claims);
      return claims;
    },
  };
}

/** A safe, useful reason for the WWW-Authenticate error_description (never echoes the token). */
function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'The access token has expired.';
  if (error instanceof errors.JWTClaimValidationFailed)
    return `The access token's ${error.claim} claim is not acceptable.`;
  if (error instanceof errors.JOSEAlgNotAllowed)
    return 'The access token is not signed with an accepted algorithm.';
  if (error instanceof errors.JWKSNoMatchingKey) return 'The access token is signed by an unknown key.';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'The access token signature is invalid.';
  return 'The access token is malformed or invalid.';
}

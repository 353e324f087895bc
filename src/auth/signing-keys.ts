// Token signing keys (Ed25519, EdDSA; the contract publishes only those, for access and ID tokens):
// generated on first start, persisted (private JWK sealed with the SecretBox), rotated on demand.
// A retired key stays published in the JWKS until every token it signed has expired, so rotation
// never breaks a token.
import type { EntityManager } from '@mikro-orm/core';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { SecretBox } from '../crypto/secret-box.ts';
import { SigningKey } from '../db/entities/SigningKey.ts';

export const SIGNING_ALGORITHMS = ['EdDSA'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

export interface SigningKeySet {
  /** Private JWKs for oidc-provider: per algorithm the active key comes first (it is the one used to sign). */
  privateJwks: JWK[];
  /** Public JWKs of every published key (active and retired-but-not-expired). */
  publicJwks: JWK[];
  /** kids of every published key; changes when any instance rotates. */
  fingerprint: string;
}

function sealContext(kid: string): string {
  return `signing-key:${kid}`;
}

async function generate(alg: SigningAlgorithm, box: SecretBox, now: Date): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  // RFC 7638 thumbprint: the kid names the key material itself.
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
  return {
    kid,
    alg,
    privateJwkEncrypted: box.seal(JSON.stringify(privateJwk), sealContext(kid)),
    publicJwk: { ...publicJwk, kid, alg, use: 'sig' },
    createdAt: now,
    activatedAt: now,
    retiredAt: null,
  } as SigningKey;
}

/** Creates an active key for every algorithm that has none (first start). Idempotent. */
export async function ensureSigningKeys(em: EntityManager, box: SecretBox): Promise<void> {
  const active = await em.fork().find(SigningKey, { retiredAt: null });
  const missing = SIGNING_ALGORITHMS.filter((alg) => !active.some((key) => key.alg === alg));
  if (missing.length === 0) return;
  const fork = em.fork();
  const now = new Date();
  for (const alg of missing) fork.create(SigningKey, await generate(alg, box, now));
  await fork.flush();
}

/**
 * Makes a fresh key the signer for every algorithm and retires the current ones (they stay published
 * for `retainSeconds`, the longest lifetime of a token they signed). Keys retired longer ago than that
 * are deleted. Returns the new kids.
 */
export async function rotateSigningKey(
  em: EntityManager,
  box: SecretBox,
  retainSeconds: number,
): Promise<string[]> {
  const now = new Date();
  const fresh = await Promise.all(SIGNING_ALGORITHMS.map((alg) => generate(alg, box, now)));
  await em.fork().transactional(async (tx) => {
    await tx.nativeUpdate(SigningKey, { retiredAt: null }, { retiredAt: now });
    await tx.nativeDelete(SigningKey, { retiredAt: { $lt: new Date(now.getTime() - retainSeconds * 1000) } });
    for (const key of fresh) tx.create(SigningKey, key);
  });
  return fresh.map((key) => key.kid);
}

/** Published keys (active, or retired less than `retainSeconds` ago): active first, newest first. */
async function publishedKeys(em: EntityManager, retainSeconds: number): Promise<SigningKey[]> {
  const cutoff = new Date(Date.now() - retainSeconds * 1000);
  const rows = await em
    .fork()
    .find(SigningKey, { $or: [{ retiredAt: null }, { retiredAt: { $gt: cutoff } }] });
  return rows.sort((a, b) => {
    const activeFirst = Number(a.retiredAt !== null) - Number(b.retiredAt !== null);
    return activeFirst || b.activatedAt.getTime() - a.activatedAt.getTime();
  });
}

function fingerprintOf(rows: SigningKey[]): string {
  return rows.map((row) => `${row.kid}:${row.retiredAt ? 'retired' : 'active'}`).join(',');
}

/** Every published key, decrypted for the provider. */
export async function loadSigningKeys(
  em: EntityManager,
  box: SecretBox,
  retainSeconds: number,
): Promise<SigningKeySet> {
  const rows = await publishedKeys(em, retainSeconds);
  return {
    privateJwks: rows.map(
      (row) => JSON.parse(box.open(row.privateJwkEncrypted, sealContext(row.kid))) as JWK,
    ),
    publicJwks: rows.map((row) => row.publicJwk as JWK),
    fingerprint: fingerprintOf(rows),
  };
}

/** Which keys are published, to notice another instance's rotation without decrypting anything. */
export async function signingKeysFingerprint(em: EntityManager, retainSeconds: number): Promise<string> {
  return fingerprintOf(await publishedKeys(em, retainSeconds));
}

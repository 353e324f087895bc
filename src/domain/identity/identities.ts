// Users' DIDs: a did:key whose private key the service generates and keeps sealed, or one whose
// public key the caller registers (then only the caller can sign as that DID) after proving it
// holds the private key by signing a challenge (13.8: else anyone could register someone else's
// key, and its owner would get 409).
import { createPublicKey, generateKeyPairSync, randomBytes, verify as verifySignature } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { Identity, User } from '../../db/entities/index.ts';
import type { Orm } from '../../db/orm.ts';
import { AppError, ConflictError, ForbiddenError, ValidationError } from '../errors.ts';
import {
  didKeyDocument,
  didKeyFromEd25519,
  ed25519Multikey,
  ed25519PublicKeyFromMultikey,
  isValidEd25519Point,
} from './did-key.ts';

/** An identity as the contract publishes it. */
export type IdentityView = components['schemas']['Identity'];

export const heldKeySealContext = (did: string) => `user-did-key:${did}`;

/** How long a key-registration challenge may be answered. */
export const KEY_CHALLENGE_TTL_MS = 10 * 60 * 1000;
const CHALLENGE_SEAL_CONTEXT = 'did-key-registration-challenge';

export type KeyChallenge = components['schemas']['KeyChallenge'];

/** Proof that the caller holds the private key: an Ed25519 signature over the challenge's UTF-8 bytes. */
export interface KeyPossessionProof {
  challenge: string;
  /** base64url, 64 bytes. */
  signature: string;
}

export class KeyPossessionError extends ForbiddenError {
  constructor(detail: string) {
    super(detail, '/problems/key-possession-not-proven');
  }
}

function publicKeyOf(publicKeyMultibase: string): Uint8Array {
  const publicKey = ed25519PublicKeyFromMultikey(publicKeyMultibase);
  if (!isValidEd25519Point(publicKey)) {
    throw new AppError(400, '/problems/invalid-public-key', {
      detail: 'publicKeyMultibase does not decode to a valid Ed25519 public key.',
    });
  }
  return publicKey;
}

/**
 * A challenge for registering `publicKeyMultibase` as the user's: sealed (authenticated
 * encryption) with the user, the key and the expiry, so it needs no storage and cannot be used by
 * another user or for another key. Replaying an answered one can only register the same key for the
 * same user again, which the DID's uniqueness refuses.
 */
export function createKeyChallenge(
  secretBox: SecretBox,
  userId: string,
  publicKeyMultibase: string,
  now = new Date(),
): KeyChallenge {
  publicKeyOf(publicKeyMultibase);
  const expiresAt = new Date(now.getTime() + KEY_CHALLENGE_TTL_MS);
  const content = {
    u: userId,
    k: publicKeyMultibase,
    e: expiresAt.getTime(),
    n: randomBytes(16).toString('base64url'),
  };
  return {
    challenge: secretBox.seal(JSON.stringify(content), CHALLENGE_SEAL_CONTEXT),
    expiresAt: expiresAt.toISOString(),
  };
}

function checkPossession(
  secretBox: SecretBox,
  userId: string,
  publicKeyMultibase: string,
  publicKey: Uint8Array,
  proof: KeyPossessionProof | undefined,
  now: Date,
): void {
  if (!proof) {
    throw new ValidationError(
      'Registering a public key needs proof that you hold it: get a challenge from POST /identity/create/challenge and send it with its signature.',
      [{ pointer: '/body/signature', detail: 'is required with publicKeyMultibase' }],
    );
  }
  let content: { u?: unknown; k?: unknown; e?: unknown };
  try {
    content = JSON.parse(secretBox.open(proof.challenge, CHALLENGE_SEAL_CONTEXT));
  } catch {
    throw new KeyPossessionError('The challenge is not one this service issued.');
  }
  if (content.u !== userId || content.k !== publicKeyMultibase)
    throw new KeyPossessionError('The challenge was issued for another user or another key.');
  if (typeof content.e !== 'number' || content.e < now.getTime())
    throw new KeyPossessionError('The challenge has expired; request a new one.');
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') },
    format: 'jwk',
  });
  const signature = Buffer.from(proof.signature, 'base64url');
  if (signature.length !== 64 || !verifySignature(null, Buffer.from(proof.challenge, 'utf8'), key, signature))
    throw new KeyPossessionError('The signature over the challenge does not verify with publicKeyMultibase.');
}

export async function createIdentity(
  orm: Orm,
  secretBox: SecretBox,
  userId: string,
  publicKeyMultibase?: string,
  proof?: KeyPossessionProof,
  now = new Date(),
): Promise<IdentityView> {
  let publicKey: Uint8Array;
  let sealedPrivateKey: string | null = null;
  if (publicKeyMultibase) {
    publicKey = publicKeyOf(publicKeyMultibase);
    checkPossession(secretBox, userId, publicKeyMultibase, publicKey, proof, now);
  } else {
    const { privateKey } = generateKeyPairSync('ed25519');
    const jwk = privateKey.export({ format: 'jwk' });
    publicKey = new Uint8Array(Buffer.from(jwk.x as string, 'base64url'));
    sealedPrivateKey = secretBox.seal(JSON.stringify(jwk), heldKeySealContext(didKeyFromEd25519(publicKey)));
  }
  const did = didKeyFromEd25519(publicKey);
  const em = orm.em.fork();
  const identity = em.create(Identity, {
    did,
    user: em.getReference(User, userId),
    publicKeyMultibase: ed25519Multikey(publicKey),
    encryptedPrivateKey: sealedPrivateKey,
    createdAt: new Date(),
  });
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      throw new ConflictError(`${did} is already registered.`, '/problems/did-exists');
    throw error;
  }
  return {
    did,
    didDocument: didKeyDocument(did),
    keyCustody: sealedPrivateKey ? 'service' : 'caller',
    createdAt: identity.createdAt.toISOString(),
  };
}

// Users' DIDs: a did:key whose private key the service generates and keeps sealed, or one whose
// public key the caller registers (then only the caller can sign as that DID).
import { generateKeyPairSync } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { Identity, User } from '../../db/entities/index.ts';
import type { Orm } from '../../db/orm.ts';
import { AppError, ConflictError } from '../errors.ts';
import type { DidDocument } from './did-document.ts';
import {
  didKeyDocument,
  didKeyFromEd25519,
  ed25519Multikey,
  ed25519PublicKeyFromMultikey,
  isValidEd25519Point,
} from './did-key.ts';

export interface IdentityView {
  did: string;
  didDocument: DidDocument;
  keyCustody: 'service' | 'caller';
  createdAt: string;
}

export const heldKeySealContext = (did: string) => `user-did-key:${did}`;

export async function createIdentity(
  orm: Orm,
  secretBox: SecretBox,
  userId: string,
  publicKeyMultibase?: string,
): Promise<IdentityView> {
  let publicKey: Uint8Array;
  let sealedPrivateKey: string | null = null;
  if (publicKeyMultibase) {
    publicKey = ed25519PublicKeyFromMultikey(publicKeyMultibase);
    if (!isValidEd25519Point(publicKey)) {
      throw new AppError(400, '/problems/invalid-public-key', 'Invalid public key', {
        detail: 'publicKeyMultibase does not decode to a valid Ed25519 public key.',
      });
    }
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
      throw new ConflictError(
        `${did} is already registered.`,
        '/problems/did-exists',
        'DID already registered',
      );
    throw error;
  }
  return {
    did,
    didDocument: didKeyDocument(did),
    keyCustody: sealedPrivateKey ? 'service' : 'caller',
    createdAt: identity.createdAt.toISOString(),
  };
}

// The service's own identity: `did:web:<host>` derived from the public URL, whose document (served at
// /.well-known/did.json) lists the service's credential-signing keys. Keys are Ed25519, generated on
// first start and kept sealed in the database (identity rows without a user), so every instance
// sharing the database signs with the same key and publishes the same document.
import { generateKeyPairSync } from 'node:crypto';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';
import { type CryptoKey, importJWK, type JWK } from 'jose';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { Identity } from '../../db/entities/index.ts';
import type { Orm } from '../../db/orm.ts';
import type { DidDocument } from './did-document.ts';
import { DID_V1_CONTEXT, didKeyFromEd25519, ed25519Multikey, MULTIKEY_V1_CONTEXT } from './did-key.ts';

export interface IssuerSigningKey {
  /** The verification method id, `did:web:...#<multikey>`: the JWS `kid` and the proof's verificationMethod. */
  methodId: string;
  publicKeyMultibase: string;
  privateKey: CryptoKey;
  /** The key pair in the form the Data Integrity suites take. */
  multikey: Ed25519Multikey.Ed25519KeyPair;
}

export interface ServiceIssuer {
  did: string;
  /** Signs everything new. */
  signingKey: IssuerSigningKey;
  didDocument: DidDocument;
}

/**
 * `did:web` for a public URL: the host, with a port percent-encoded (`did:web:localhost%3A3000`).
 * A path in the URL is ignored: the document is served at the host's /.well-known/did.json, so the
 * service must be reachable at the root of its host for others to resolve it.
 */
export function didWebFromPublicUrl(publicUrl: string): string {
  const { host } = new URL(publicUrl);
  return `did:web:${host.replace(':', '%3A')}`;
}

const sealContext = (did: string) => `service-did-key:${did}`;

function generateKey(): { publicKey: Uint8Array; privateJwk: JWK } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const privateJwk = privateKey.export({ format: 'jwk' }) as JWK;
  return { publicKey: new Uint8Array(Buffer.from(privateJwk.x as string, 'base64url')), privateJwk };
}

/** Loads the service's keys (generating the first one if there is none) and builds its identity. */
export async function loadServiceIssuer(
  orm: Orm,
  secretBox: SecretBox,
  publicUrl: string,
): Promise<ServiceIssuer> {
  const did = didWebFromPublicUrl(publicUrl);
  const em = orm.em.fork();
  let rows = await em.find(Identity, { user: null }, { orderBy: { createdAt: 'asc', did: 'asc' } });
  if (rows.length === 0) {
    const { publicKey, privateJwk } = generateKey();
    const keyDid = didKeyFromEd25519(publicKey);
    em.create(Identity, {
      did: keyDid,
      user: null,
      publicKeyMultibase: ed25519Multikey(publicKey),
      encryptedPrivateKey: secretBox.seal(JSON.stringify(privateJwk), sealContext(keyDid)),
      createdAt: new Date(),
    });
    await em.flush();
    // Another instance may have generated one at the same moment: all of them sign with the oldest.
    rows = await em.fork().find(Identity, { user: null }, { orderBy: { createdAt: 'asc', did: 'asc' } });
  }
  const methodIds = rows.map((row) => `${did}#${row.publicKeyMultibase}`);
  const current = rows[0];
  const privateJwk = JSON.parse(
    secretBox.open(current.encryptedPrivateKey as string, sealContext(current.did)),
  ) as JWK;
  const signingKey: IssuerSigningKey = {
    methodId: methodIds[0],
    publicKeyMultibase: current.publicKeyMultibase,
    privateKey: (await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA')) as CryptoKey,
    multikey: await Ed25519Multikey.fromJwk({
      jwk: privateJwk as Record<string, unknown>,
      secretKey: true,
      id: methodIds[0],
      controller: did,
    }),
  };
  const didDocument: DidDocument = {
    '@context': [DID_V1_CONTEXT, MULTIKEY_V1_CONTEXT],
    id: did,
    verificationMethod: rows.map((row, index) => ({
      id: methodIds[index],
      type: 'Multikey',
      controller: did,
      publicKeyMultibase: row.publicKeyMultibase,
    })),
    // Only the current key authenticates; every key, retired ones too, still vouches for what it signed.
    authentication: [methodIds[0]],
    assertionMethod: methodIds,
  };
  return { did, signingKey, didDocument };
}

// Keys that play other parties in identity tests: a did:key whose private key the test holds, able
// to sign VC-JOSE credentials and presentations, Data Integrity presentations, and to pose as
// someone else's key.
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import * as vc from '@digitalbazaar/vc';
import { CompactSign, importJWK, type JWK } from 'jose';
import { didKeyFromEd25519, ed25519Multikey } from '../../../src/domain/identity/did-key.ts';

export interface TestKey {
  did: string;
  publicKeyMultibase: string;
  methodId: string;
  privateJwk: JWK;
  /** 64 bytes: seed then public key (what did-jwt's EdDSASigner takes). */
  secretKey: Uint8Array;
  /** Signs `payload` as a compact JWS with the given header fields (alg EdDSA unless given). */
  signJws(payload: unknown, header?: Record<string, unknown>): Promise<string>;
  /** The key pair as Data Integrity signers take it, named `methodId` (or another id). */
  multikey(id?: string, controller?: string): Promise<Ed25519Multikey.Ed25519KeyPair>;
  /** A raw Ed25519 signature of the text's UTF-8 bytes, base64url (a key-registration proof). */
  signText(text: string): string;
}

/** What registering a caller-held key needs of the identity service. */
interface KeyRegistrar {
  createKeyChallenge(userId: string, publicKeyMultibase: string): { challenge: string };
  createIdentity(
    userId: string,
    publicKeyMultibase?: string,
    proof?: { challenge: string; signature: string },
  ): Promise<{ did: string }>;
}

/** Registers `key` as one of the user's DIDs, proving possession as a client would (13.8). */
export async function registerKey(identity: KeyRegistrar, userId: string, key: TestKey) {
  const { challenge } = identity.createKeyChallenge(userId, key.publicKeyMultibase);
  return identity.createIdentity(userId, key.publicKeyMultibase, {
    challenge,
    signature: key.signText(challenge),
  });
}

export async function newTestKey(): Promise<TestKey> {
  const { privateKey } = generateKeyPairSync('ed25519');
  const privateJwk = privateKey.export({ format: 'jwk' }) as JWK;
  const publicKey = new Uint8Array(Buffer.from(privateJwk.x as string, 'base64url'));
  const did = didKeyFromEd25519(publicKey);
  const publicKeyMultibase = ed25519Multikey(publicKey);
  const methodId = `${did}#${publicKeyMultibase}`;
  const signingKey = await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA');
  return {
    did,
    publicKeyMultibase,
    methodId,
    privateJwk,
    secretKey: Uint8Array.from([...Buffer.from(privateJwk.d as string, 'base64url'), ...publicKey]),
    signJws(payload, header = {}) {
      return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'EdDSA', ...header })
        .sign(signingKey);
    },
    signText(text) {
      const privateKeyObject = createPrivateKey({ key: privateJwk as never, format: 'jwk' });
      return sign(null, Buffer.from(text, 'utf8'), privateKeyObject).toString('base64url');
    },
    multikey(id = methodId, controller = did) {
      return Ed25519Multikey.fromJwk({
        jwk: privateJwk as Record<string, unknown>,
        secretKey: true,
        id,
        controller,
      });
    },
  };
}

/** A JWS with `alg: none` and a dummy signature (an empty one is not even a well-formed request). */
export function unsecuredJws(payload: unknown, header: Record<string, unknown> = {}): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ alg: 'none', ...header })}.${encode(payload)}.AAAA`;
}

/**
 * A VC Data Model 2.0 presentation with `body` (holder, credentials, ...) and a Data Integrity
 * proof (eddsa-rdfc-2022) by `signer` for the verifier's challenge (and domain).
 */
export async function signedPresentation(
  signer: TestKey,
  body: Record<string, unknown>,
  proof: { challenge: string; domain?: string; documentLoader: (url: string) => Promise<unknown> },
): Promise<Record<string, any>> {
  return vc.signPresentation({
    presentation: {
      '@context': ['https://www.w3.org/ns/credentials/v2'],
      type: ['VerifiablePresentation'],
      ...body,
    },
    suite: new DataIntegrityProof({ signer: (await signer.multikey()).signer(), cryptosuite: eddsaRdfc2022 }),
    challenge: proof.challenge,
    ...(proof.domain ? { domain: proof.domain } : {}),
    documentLoader: proof.documentLoader,
  });
}

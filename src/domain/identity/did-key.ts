// did:key (W3C CCG did:key method, Multikey form): the DID is the public key itself, multibase
// base58-btc of the multicodec-prefixed key, so resolution is a pure function of the string.
// Ed25519 keys are created here; Ed25519, P-256 and P-384 keys are resolved (enough to verify what
// common wallets and libraries sign); other key types are refused by name.
import { ECDH } from 'node:crypto';
import type { JWK } from 'jose';
import type { DidDocument } from './did-document.ts';
import { InvalidDidError, UnsupportedKeyTypeError } from './errors.ts';
import { base58btcDecode, multibaseBase58btc } from './multibase.ts';

export type DidKeyType = 'Ed25519' | 'P-256' | 'P-384';

interface Codec {
  /** The multicodec code as its unsigned-varint bytes. */
  prefix: number[];
  keyType: DidKeyType;
  keyLength: number;
}

const SUPPORTED: Codec[] = [
  { prefix: [0xed, 0x01], keyType: 'Ed25519', keyLength: 32 },
  { prefix: [0x80, 0x24], keyType: 'P-256', keyLength: 33 },
  { prefix: [0x81, 0x24], keyType: 'P-384', keyLength: 49 },
];

/** Known multicodecs that did:key allows but this service does not resolve, for a precise answer. */
const UNSUPPORTED: { prefix: number[]; name: string }[] = [
  { prefix: [0xe7, 0x01], name: 'secp256k1' },
  { prefix: [0xec, 0x01], name: 'X25519 (key agreement only)' },
  { prefix: [0xeb, 0x01], name: 'BLS12-381 G2' },
  { prefix: [0xea, 0x01], name: 'BLS12-381 G1' },
  { prefix: [0xee, 0x01], name: 'BLS12-381 G1+G2' },
  { prefix: [0x85, 0x24], name: 'RSA' },
  { prefix: [0x82, 0x24], name: 'P-521' },
];

export const DID_V1_CONTEXT = 'https://www.w3.org/ns/did/v1';
export const MULTIKEY_V1_CONTEXT = 'https://w3id.org/security/multikey/v1';

export interface DidKey {
  did: string;
  /** The method-specific id: `z` + base58-btc of multicodec prefix and key. */
  publicKeyMultibase: string;
  keyType: DidKeyType;
  /** The public key as a JWK (for JOSE verification). */
  publicKeyJwk: JWK;
}

const startsWith = (bytes: Uint8Array, prefix: number[]) => prefix.every((byte, i) => bytes[i] === byte);

/** The Multikey string of an Ed25519 public key (`z6Mk...`). */
export function ed25519Multikey(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new Error('an Ed25519 public key is 32 bytes');
  return multibaseBase58btc(Uint8Array.from([0xed, 0x01, ...publicKey]));
}

/** The raw 32-byte key of an Ed25519 Multikey string; throws InvalidDidError when it is not one. */
export function ed25519PublicKeyFromMultikey(multikey: string): Uint8Array {
  const parsed = parseMultikey(multikey);
  if (parsed.keyType !== 'Ed25519')
    throw new UnsupportedKeyTypeError(`Only Ed25519 keys are accepted here; got ${parsed.keyType}.`);
  return parsed.raw;
}

export function didKeyFromEd25519(publicKey: Uint8Array): string {
  return `did:key:${ed25519Multikey(publicKey)}`;
}

function parseMultikey(multikey: string): { keyType: DidKeyType; raw: Uint8Array } {
  if (!multikey.startsWith('z'))
    throw new InvalidDidError('A did:key must be multibase base58-btc (start with "z").');
  let bytes: Uint8Array;
  try {
    bytes = base58btcDecode(multikey.slice(1));
  } catch {
    throw new InvalidDidError('The did:key is not valid base58-btc.');
  }
  const codec = SUPPORTED.find((candidate) => startsWith(bytes, candidate.prefix));
  if (!codec) {
    const known = UNSUPPORTED.find((candidate) => startsWith(bytes, candidate.prefix));
    if (!known) throw new InvalidDidError('The did:key does not start with a known public-key multicodec.');
    throw new UnsupportedKeyTypeError(
      `did:key with a ${known.name} key is not supported; supported key types: Ed25519, P-256, P-384.`,
    );
  }
  const raw = bytes.slice(codec.prefix.length);
  if (raw.length !== codec.keyLength) {
    throw new InvalidDidError(
      `A ${codec.keyType} did:key holds ${codec.keyLength} key bytes; this one holds ${raw.length}.`,
    );
  }
  return { keyType: codec.keyType, raw };
}

function toJwk(keyType: DidKeyType, raw: Uint8Array): JWK {
  if (keyType === 'Ed25519') return { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') };
  // Multikey carries the compressed point; JOSE needs both coordinates.
  const curve = keyType === 'P-256' ? 'prime256v1' : 'secp384r1';
  let point: Buffer;
  try {
    point = ECDH.convertKey(Buffer.from(raw), curve, undefined, undefined, 'uncompressed') as Buffer;
  } catch {
    throw new InvalidDidError(`The did:key does not hold a valid ${keyType} point.`);
  }
  const size = (point.length - 1) / 2;
  return {
    kty: 'EC',
    crv: keyType,
    x: point.subarray(1, 1 + size).toString('base64url'),
    y: point.subarray(1 + size).toString('base64url'),
  };
}

/** Parses a did:key (no path, query or fragment); throws InvalidDidError / UnsupportedKeyTypeError. */
export function parseDidKey(did: string): DidKey {
  const match = /^did:key:(z[1-9A-HJ-NP-Za-km-z]+)$/.exec(did);
  if (!match)
    throw new InvalidDidError('A did:key is "did:key:" followed by a base58-btc multibase key ("z...").');
  const { keyType, raw } = parseMultikey(match[1]);
  return { did, publicKeyMultibase: match[1], keyType, publicKeyJwk: toJwk(keyType, raw) };
}

/**
 * The DID document the did:key specification derives (Multikey form, encryption-key derivation
 * off, which is the specification's default): one verification method whose fragment is the key
 * itself, referenced from the four signing relationships.
 */
export function didKeyDocument(did: string): DidDocument {
  const { publicKeyMultibase } = parseDidKey(did);
  const methodId = `${did}#${publicKeyMultibase}`;
  return {
    '@context': [DID_V1_CONTEXT, MULTIKEY_V1_CONTEXT],
    id: did,
    verificationMethod: [{ id: methodId, type: 'Multikey', controller: did, publicKeyMultibase }],
    authentication: [methodId],
    assertionMethod: [methodId],
    capabilityDelegation: [methodId],
    capabilityInvocation: [methodId],
  };
}

const P = 2n ** 255n - 19n;

function modPow(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = base % P;
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}

const D = (((-121665n * modPow(121666n, P - 2n)) % P) + P) % P;

/**
 * Whether 32 bytes are the encoding of a point on Ed25519 (RFC 8032 §5.1.3): y below p, and
 * x² = (y² - 1) / (d·y² + 1) a square. Libraries import any 32 bytes as a key, so a registered
 * public key is checked here instead of failing every signature later.
 */
export function isValidEd25519Point(publicKey: Uint8Array): boolean {
  if (publicKey.length !== 32) return false;
  const bytes = Uint8Array.from(publicKey);
  const sign = bytes[31] >> 7;
  bytes[31] &= 0x7f;
  const y = BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`);
  if (y >= P) return false;
  const y2 = (y * y) % P;
  const x2 = (((y2 - 1n + P) % P) * modPow((D * y2 + 1n) % P, P - 2n)) % P;
  if (x2 === 0n) return sign === 0;
  return modPow(x2, (P - 1n) / 2n) === 1n;
}

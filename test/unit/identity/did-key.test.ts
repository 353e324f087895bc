// did:key against the published vectors: documents resolved by an independent resolver (Multikey
// form), the method's 2019 Ed25519 vectors (seed -> DID), and refusal of key types not supported.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { Resolver } from 'did-resolver';
import KeyResolver from 'key-did-resolver';
import { describe, expect, it } from 'vitest';
import {
  didKeyDocument,
  didKeyFromEd25519,
  ed25519PublicKeyFromMultikey,
  isValidEd25519Point,
  parseDidKey,
} from '../../../src/domain/identity/did-key.ts';
import { InvalidDidError, UnsupportedKeyTypeError } from '../../../src/domain/identity/errors.ts';
import { base58btcDecode } from '../../../src/domain/identity/multibase.ts';
import { readConformanceJson } from './conformance.ts';

type Doc = Record<string, any>;
const RELATIONSHIPS = [
  'authentication',
  'assertionMethod',
  'capabilityDelegation',
  'capabilityInvocation',
  'keyAgreement',
];

/** What the vectors are compared on: ids, types, keys and verification relationships. */
function shape(document: Doc) {
  return {
    context: document['@context'],
    id: document.id,
    methods: document.verificationMethod.map((method: Doc) => [
      method.id,
      method.type,
      method.controller,
      method.publicKeyMultibase,
    ]),
    relationships: Object.fromEntries(
      RELATIONSHIPS.filter((name) => name in document).map((name) => [name, document[name]]),
    ),
  };
}

const expected = readConformanceJson<{ docs: Record<string, Doc> }>(
  'did-key/expected-multikey-docs.json',
).docs;

describe('did:key documents (Multikey form)', () => {
  const dids = Object.keys(expected);

  it('covers the 12 independently resolved DIDs', () => {
    expect(dids).toHaveLength(12);
  });

  for (const did of dids) {
    it(`resolves ${did.slice(0, 24)}... like the independent resolver`, () => {
      expect(shape(didKeyDocument(did))).toEqual(shape(expected[did]));
    });
  }
});

describe('did:key against a second independent resolver (key-did-resolver, 2018/2019 key formats)', () => {
  const resolver = new Resolver(KeyResolver.getResolver());

  for (const did of Object.keys(expected)) {
    it(`agrees on ${did.slice(0, 24)}...: method id, relationships and key`, async () => {
      const theirs = (await resolver.resolve(did)).didDocument as Doc;
      const ours = didKeyDocument(did) as Doc;
      const [method] = theirs.verificationMethod;
      expect(method.id).toBe(ours.verificationMethod[0].id);
      expect(method.controller).toBe(did);
      for (const name of [
        'authentication',
        'assertionMethod',
        'capabilityDelegation',
        'capabilityInvocation',
      ]) {
        expect(theirs[name]).toEqual(ours[name]);
      }
      const { publicKeyJwk } = parseDidKey(did);
      if (method.publicKeyBase58) {
        expect(Buffer.from(base58btcDecode(method.publicKeyBase58)).toString('base64url')).toBe(
          publicKeyJwk.x,
        );
      } else {
        expect(method.publicKeyJwk).toMatchObject({ x: publicKeyJwk.x, y: publicKeyJwk.y });
      }
    });
  }
});

describe('did:key from Ed25519 keys (method test vectors)', () => {
  const vectors = readConformanceJson<Record<string, Doc>>('did-key/ed25519-x25519.json');
  // PKCS#8 DER prefix of an Ed25519 private key, followed by the 32-byte seed.
  const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

  for (const [did, vector] of Object.entries(vectors).filter(([, candidate]) => candidate.seed)) {
    it(`derives ${did.slice(0, 24)}... from its seed`, () => {
      const privateKey = createPrivateKey({
        key: Buffer.concat([PKCS8_PREFIX, Buffer.from(vector.seed, 'hex')]),
        format: 'der',
        type: 'pkcs8',
      });
      const x = createPublicKey(privateKey).export({ format: 'jwk' }).x as string;
      const publicKey = new Uint8Array(Buffer.from(x, 'base64url'));
      expect(didKeyFromEd25519(publicKey)).toBe(did);
      const published = vector.verificationKeyPair.publicKeyBase58;
      if (published) expect(Buffer.from(publicKey)).toEqual(Buffer.from(base58btcDecode(published)));
      const document = didKeyDocument(did);
      expect(document.verificationMethod[0].id).toBe(vector.didDocument.verificationMethod[0].id);
      for (const name of [
        'authentication',
        'assertionMethod',
        'capabilityDelegation',
        'capabilityInvocation',
      ]) {
        expect((document as Doc)[name]).toEqual(vector.didDocument[name]);
      }
    });
  }
});

describe('did:key parsing', () => {
  it('gives the JWK of Ed25519, P-256 and P-384 keys', () => {
    expect(
      parseDidKey('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK').publicKeyJwk,
    ).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    const nist = readConformanceJson<Record<string, Doc>>('did-key/nist-curves.json');
    for (const [did, vector] of Object.entries(nist)) {
      const jwk = vector.verificationMethod.publicKeyJwk;
      if (!jwk) continue;
      if (jwk.crv === 'P-521') {
        expect(() => parseDidKey(did)).toThrow(UnsupportedKeyTypeError);
        continue;
      }
      expect(parseDidKey(did).publicKeyJwk).toMatchObject({ kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y });
    }
  });

  it.each([
    ['secp256k1', 'did-key/secp256k1.json'],
    ['BLS12-381', 'did-key/bls12381.json'],
    ['RSA', 'did-key/rsa.json'],
  ])('refuses %s keys as unsupported', (_name, file) => {
    for (const did of Object.keys(readConformanceJson(file))) {
      expect(() => didKeyDocument(did)).toThrow(UnsupportedKeyTypeError);
    }
  });

  it('refuses X25519 keys (key agreement only)', () => {
    const x25519 = readConformanceJson<{ didDocument: Record<string, unknown> }>('did-key/x25519.json');
    for (const did of Object.keys(x25519.didDocument))
      expect(() => didKeyDocument(did)).toThrow(UnsupportedKeyTypeError);
  });

  it.each([
    'did:key:',
    'did:key:6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
    'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2do',
    'did:key:z0OIl',
  ])('rejects the malformed %s', (did) => {
    expect(() => didKeyDocument(did)).toThrow(InvalidDidError);
  });

  it('accepts only Ed25519 Multikeys as user keys, and only points on the curve', () => {
    expect(() => ed25519PublicKeyFromMultikey('zDnaerx9CtbPJ1q36T5Ln5wYt3MQYeGRG5ehnPAmxcf5mDZpv')).toThrow(
      UnsupportedKeyTypeError,
    );
    const key = ed25519PublicKeyFromMultikey('z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK');
    expect(isValidEd25519Point(key)).toBe(true);
    // y = 2 is not the y-coordinate of any Ed25519 point.
    const offCurve = new Uint8Array(32);
    offCurve[0] = 2;
    expect(isValidEd25519Point(offCurve)).toBe(false);
  });
});

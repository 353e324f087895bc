// DID resolution without network access: did:key and did:jwk are derived from the DID itself, this
// service's did:web is answered from memory. Any other DID is refused rather than fetched, so a
// credential can never make the service call out to a URL of its author's choosing.
import { NotFoundError } from '../errors.ts';
import type { DidDocument } from './did-document.ts';
import { DID_V1_CONTEXT, didKeyDocument } from './did-key.ts';
import { DidMethodNotSupportedError, InvalidDidError } from './errors.ts';

export interface DidResolver {
  /** Resolves a DID (no fragment); throws InvalidDidError, UnsupportedKeyTypeError, DidMethodNotSupportedError or NotFoundError. */
  resolve(did: string): Promise<DidDocument>;
}

const DID_SYNTAX = /^did:[a-z0-9]+:([A-Za-z0-9._-]|%[0-9A-Fa-f]{2}|:)*([A-Za-z0-9._-]|%[0-9A-Fa-f]{2})$/;

/**
 * did:jwk (the DID is a base64url JSON Web Key). Its document uses JsonWebKey2020 methods; a
 * key marked `use: enc` only agrees keys, any other key signs.
 */
export function didJwkDocument(did: string): DidDocument {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(did.slice('did:jwk:'.length), 'base64url').toString('utf8'));
  } catch {
    throw new InvalidDidError('A did:jwk is "did:jwk:" followed by a base64url-encoded JSON Web Key.');
  }
  if (!isObject(parsed) || typeof parsed.kty !== 'string' || 'd' in parsed) {
    throw new InvalidDidError('A did:jwk must encode a public JSON Web Key.');
  }
  const jwk = { ...parsed, kty: parsed.kty };
  const methodId = `${did}#0`;
  const signing = parsed.use !== 'enc';
  const agreement = parsed.use !== 'sig';
  return {
    '@context': [DID_V1_CONTEXT, 'https://w3id.org/security/suites/jws-2020/v1'],
    id: did,
    verificationMethod: [{ id: methodId, type: 'JsonWebKey2020', controller: did, publicKeyJwk: jwk }],
    ...(signing
      ? {
          assertionMethod: [methodId],
          authentication: [methodId],
          capabilityInvocation: [methodId],
          capabilityDelegation: [methodId],
        }
      : {}),
    ...(agreement ? { keyAgreement: [methodId] } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `serviceDocument` answers this service's own did:web (`serviceDid`) document. */
export function createDidResolver(
  serviceDid: string,
  serviceDocument: () => Promise<DidDocument>,
): DidResolver {
  return {
    async resolve(did) {
      if (!DID_SYNTAX.test(did)) throw new InvalidDidError(`${did.slice(0, 100)} is not a DID.`);
      if (did.startsWith('did:key:')) return didKeyDocument(did);
      if (did.startsWith('did:jwk:')) return didJwkDocument(did);
      if (did === serviceDid) return serviceDocument();
      if (did.startsWith('did:web:'))
        throw new NotFoundError(`${did} is not a DID of this service; other did:web DIDs are not fetched.`);
      throw new DidMethodNotSupportedError(
        `Only did:key, did:jwk and this service's did:web are resolved; got did:${did.split(':')[1]}.`,
      );
    },
  };
}

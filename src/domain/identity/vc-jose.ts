// Credentials and presentations secured with JOSE (W3C VC-JOSE-COSE): a compact JWS whose payload
// is the credential (`typ: vc+jwt`) or presentation (`typ: vp+jwt`) itself. Verification resolves
// the key from the header's `kid` (a DID URL), or from the issuer's assertion methods when there is
// no `kid`, and accepts only asymmetric algorithms that match the key: never `none`, never HMAC.
import {
  CompactSign,
  type CryptoKey,
  compactVerify,
  decodeProtectedHeader,
  importJWK,
  type JWK,
  type ProtectedHeaderParameters,
} from 'jose';
import {
  type DidDocument,
  findVerificationMethod,
  isAuthorized,
  type VerificationMethod,
} from './did-document.ts';
import { parseDidKey } from './did-key.ts';
import type { DidResolver } from './did-resolver.ts';

type Json = Record<string, unknown>;

export interface JoseSigningKey {
  methodId: string;
  privateKey: CryptoKey;
}

/** Signs `payload` as a compact JWS with header `typ` (`vc+jwt` or `vp+jwt`), EdDSA, kid = the key's method id. */
export async function signJose(
  payload: Json,
  typ: 'vc+jwt' | 'vp+jwt',
  key: JoseSigningKey,
): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'EdDSA', typ, cty: typ === 'vc+jwt' ? 'vc' : 'vp', kid: key.methodId })
    .sign(key.privateKey);
}

export interface DecodedJose {
  header: ProtectedHeaderParameters;
  payload: Json;
}

/** Splits a compact JWS without checking it; throws with a reason when it is not a JSON JWS. */
export function decodeJose(jwt: string): DecodedJose {
  const parts = jwt.split('.');
  if (parts.length !== 3) throw new Error('A JWS in compact form has three base64url parts.');
  let header: ProtectedHeaderParameters;
  let payload: unknown;
  try {
    header = decodeProtectedHeader(jwt);
    payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    throw new Error('The JWS header or payload is not base64url-encoded JSON.');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    throw new Error('The JWS payload is not a JSON object.');
  return { header, payload: payload as Json };
}

/** The JOSE algorithms each key type may sign with. */
function algorithmsFor(jwk: JWK): string[] {
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return ['EdDSA', 'Ed25519'];
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return ['ES256'];
  if (jwk.kty === 'EC' && jwk.crv === 'P-384') return ['ES384'];
  return [];
}

function publicJwkOf(method: VerificationMethod): JWK {
  if (method.publicKeyJwk) return method.publicKeyJwk;
  if (method.publicKeyMultibase) return parseDidKey(`did:key:${method.publicKeyMultibase}`).publicKeyJwk;
  throw new Error(`${method.id} has no public key this service can read.`);
}

export interface JoseSignatureResult {
  verified: boolean;
  /** The verification method that verified (or was tried), and its DID document. */
  methodId: string | null;
  document: DidDocument | null;
  reason?: string;
  /** A verify.ts FailureReason code. */
  code?: 'algorithm-not-allowed' | 'unsupported-proof' | 'key-unresolvable' | 'signature-mismatch';
}

/**
 * Verifies the JWS signature. `signerDid` is whom the payload says signed it (issuer or holder),
 * used when the header has no `kid`; `relationship` picks the candidate keys in that case.
 */
export async function verifyJoseSignature(
  jwt: string,
  header: ProtectedHeaderParameters,
  signerDid: string | null,
  relationship: 'assertionMethod' | 'authentication',
  resolver: DidResolver,
): Promise<JoseSignatureResult> {
  type Code = JoseSignatureResult['code'];
  const fail = (
    code: Code,
    reason: string,
    methodId: string | null = null,
    document: DidDocument | null = null,
  ): JoseSignatureResult => ({
    verified: false,
    methodId,
    document,
    reason,
    code,
  });
  if (!header.alg || header.alg.toLowerCase() === 'none')
    return fail('algorithm-not-allowed', 'Unsecured JWTs (alg "none") are never accepted.');
  if (header.alg.startsWith('HS'))
    return fail(
      'algorithm-not-allowed',
      `alg ${header.alg} is symmetric; credentials must be signed with an asymmetric key.`,
    );
  if (header.crit !== undefined)
    return fail(
      'unsupported-proof',
      'The JWS has critical header parameters this service does not understand.',
    );
  const kid = typeof header.kid === 'string' ? header.kid : null;
  const did = kid ? kid.split('#')[0] : signerDid;
  if (!did?.startsWith('did:'))
    return fail(
      'key-unresolvable',
      'The signing key is unknown: the header has no DID URL kid and the signer is not a DID.',
    );
  let document: DidDocument;
  try {
    document = await resolver.resolve(did);
  } catch {
    // The resolver's own words may come from a library: the reason stays ours.
    return fail('key-unresolvable', `${did} cannot be resolved by this service.`, kid);
  }
  let candidates: VerificationMethod[];
  if (kid) {
    // A did:key kid may be the bare DID or `did#fragment`; did:jwk uses `#0`.
    const methodId = kid.includes('#') ? kid : document.verificationMethod[0]?.id;
    const method = methodId ? findVerificationMethod(document, methodId) : undefined;
    if (!method)
      return fail('key-unresolvable', `${kid} is not a verification method of ${did}.`, kid, document);
    candidates = [method];
  } else {
    candidates = document.verificationMethod.filter((method) =>
      isAuthorized(document, method.id, relationship),
    );
  }
  let lastReason = `No ${relationship} key of ${did} verifies the signature.`;
  let lastCode: Code = 'key-unresolvable';
  for (const method of candidates) {
    let jwk: JWK;
    try {
      jwk = publicJwkOf(method);
    } catch {
      [lastCode, lastReason] = ['key-unresolvable', `${method.id} has no public key this service can read.`];
      continue;
    }
    const algorithms = algorithmsFor(jwk);
    if (!algorithms.includes(header.alg)) {
      lastCode = 'algorithm-not-allowed';
      lastReason = `alg ${header.alg} does not match the key ${method.id} (${algorithms.join(' or ') || 'unsupported key type'}).`;
      continue;
    }
    try {
      await compactVerify(jwt, await importJWK(jwk, header.alg), { algorithms });
      return { verified: true, methodId: method.id, document };
    } catch {
      lastCode = 'signature-mismatch';
      lastReason = `The signature does not verify with ${method.id} (tampered, or signed by another key).`;
    }
  }
  return fail(lastCode, lastReason, kid ?? candidates[0]?.id ?? null, document);
}

// W3C Data Integrity proofs through Digital Bazaar's reference cryptosuites (no hand-written
// canonicalization). This service signs with eddsa-rdfc-2022 (RDF Dataset Canonicalization, SHA-256,
// Ed25519) and verifies eddsa-rdfc-2022, ecdsa-rdfc-2019 (P-256/P-384) and eddsa-jcs-2022 (JSON
// Canonicalization Scheme). Verification here checks the signature and the proof purpose term only;
// whether the key may speak for the issuer or holder is the verifier's own check (verify.ts), so
// each failure is reported under the right name.
//
// The libraries (with jsonld, rdf-canonize and an HTTP client: ~200 modules, ~0.3 CPU-s to load) are
// loaded at the first proof made or verified, not at every start of the service.
import type { Ed25519KeyPair } from '@digitalbazaar/ed25519-multikey';
import type { DocumentLoader } from 'jsonld-signatures';
import type { components } from '../../../generated/openapi/types.ts';

/** The cryptosuites this service verifies (the contract lists the same). */
export const VERIFIED_CRYPTOSUITES = ['eddsa-rdfc-2022', 'ecdsa-rdfc-2019', 'eddsa-jcs-2022'] as const;
export type VerifiedCryptosuite = (typeof VERIFIED_CRYPTOSUITES)[number];

let libraries: ReturnType<typeof loadLibraries> | undefined;
async function loadLibraries() {
  const [{ DataIntegrityProof }, ecdsaRdfc2019, eddsaJcs2022, eddsaRdfc2022, { default: jsigs }] =
    await Promise.all([
      import('@digitalbazaar/data-integrity'),
      import('@digitalbazaar/ecdsa-rdfc-2019-cryptosuite'),
      import('@digitalbazaar/eddsa-jcs-2022-cryptosuite'),
      import('@digitalbazaar/eddsa-rdfc-2022-cryptosuite'),
      import('jsonld-signatures'),
    ]);
  const cryptosuites: Record<VerifiedCryptosuite, unknown> = {
    'eddsa-rdfc-2022': eddsaRdfc2022.cryptosuite,
    'ecdsa-rdfc-2019': ecdsaRdfc2019.cryptosuite,
    'eddsa-jcs-2022': eddsaJcs2022.createVerifyCryptosuite(),
  };
  return { DataIntegrityProof, jsigs, cryptosuites };
}
/** Digital Bazaar's proof classes, jsonld-signatures and the verified cryptosuites, loaded once. */
const proofLibraries = () => {
  libraries ??= loadLibraries();
  return libraries;
};

/** JCS suites sign the JSON itself, not its RDF. */
export const isJcsSuite = (name: unknown): boolean => name === 'eddsa-jcs-2022';

const isVerifiedCryptosuite = (name: unknown): name is VerifiedCryptosuite =>
  (VERIFIED_CRYPTOSUITES as readonly unknown[]).includes(name);

type Json = Record<string, unknown>;

/** The proof `addDataIntegrityProof` adds (the contract's DataIntegrityProof). */
export type AddedProof = components['schemas']['DataIntegrityProof'];

/**
 * Adds an `assertionMethod` proof made with `keyPair` (whose id is the verification method): the
 * document as given, plus its `proof` (jsonld-signatures' eddsa-rdfc-2022 suite makes exactly the
 * contract's DataIntegrityProof; test/unit/identity checks it against the published vectors).
 */
export async function addDataIntegrityProof<T extends Json>(
  document: T,
  keyPair: Ed25519KeyPair,
  documentLoader: DocumentLoader,
  date = new Date(),
): Promise<T & { proof: AddedProof }> {
  const { DataIntegrityProof, jsigs, cryptosuites } = await proofLibraries();
  // Proof `created` has second precision, like the published vectors.
  const suite = new DataIntegrityProof({
    signer: keyPair.signer(),
    cryptosuite: cryptosuites['eddsa-rdfc-2022'],
    date: new Date(Math.floor(date.getTime() / 1000) * 1000),
  });
  const signed = await jsigs.sign(structuredClone(document), {
    suite,
    purpose: new jsigs.purposes.AssertionProofPurpose(),
    documentLoader,
  });
  // The library's boundary: it returns a plain object, the document with the proof it made.
  return signed as T & { proof: AddedProof };
}

const UNREADABLE =
  'The proof could not be checked (a malformed proof value, created date or verification method).';

export interface ProofVerification {
  verified: boolean;
  /** The verification methods of the proofs that were checked (a bare did:key as its one key). */
  verificationMethods: string[];
  proofs: Json[];
  /** Why it failed, in words (never a library's message). */
  reason?: string;
  /** A verify.ts FailureReason code. */
  code?:
    | 'no-proof'
    | 'unsupported-proof'
    | 'wrong-proof-purpose'
    | 'proof-unreadable'
    | 'proof-context-mismatch'
    | 'key-unresolvable'
    | 'signature-mismatch';
}

function proofsOf(document: Json): Json[] {
  const { proof } = document;
  if (proof === undefined) return [];
  return (Array.isArray(proof) ? proof : [proof]).filter(
    (item): item is Json => typeof item === 'object' && item !== null,
  );
}

/**
 * A did:key names exactly one key, so a bare did:key used as a verification method means that
 * key (the VC Data Model 2.0 Recommendation's ecdsa-rdfc-2019 examples are signed this way).
 */
export function verificationMethodId(value: unknown): string {
  const id = String(value ?? '');
  return id.startsWith('did:key:') && !id.includes('#') ? `${id}#${id.slice('did:key:'.length)}` : id;
}

const sameList = (a: unknown, b: unknown) =>
  JSON.stringify([a ?? []].flat()) === JSON.stringify([b ?? []].flat());

/** Each proof is checked on its own (a canonicalization each): more than this is refused, not paid for. */
export const MAX_PROOFS = 4;

/**
 * Verifies every proof of `document` (each on its own: a proof set passes only if all its proofs
 * do); each must be a DataIntegrityProof of a verified cryptosuite for `purpose`.
 */
export async function verifyDataIntegrityProofs(
  document: Json,
  purpose: string,
  documentLoader: DocumentLoader,
): Promise<ProofVerification> {
  const proofs = proofsOf(document);
  const verificationMethods = proofs.map((proof) => verificationMethodId(proof.verificationMethod));
  const fail = (code: ProofVerification['code'], reason: string): ProofVerification => ({
    verified: false,
    verificationMethods,
    proofs,
    reason,
    code,
  });
  if (proofs.length === 0) return fail('no-proof', 'The document has no proof.');
  if (proofs.length > MAX_PROOFS)
    return fail(
      'unsupported-proof',
      `The document has ${proofs.length} proofs; at most ${MAX_PROOFS} are verified.`,
    );
  for (const proof of proofs) {
    if (proof.type !== 'DataIntegrityProof' || !isVerifiedCryptosuite(proof.cryptosuite)) {
      return fail(
        'unsupported-proof',
        `Unsupported proof ${String(proof.type)}${proof.cryptosuite ? `/${String(proof.cryptosuite)}` : ''}: only DataIntegrityProof with ${VERIFIED_CRYPTOSUITES.join(', ')} is verified.`,
      );
    }
    // Digital Bazaar's libraries do not implement proof chains: a chained proof signs the proofs
    // before it too, which verifying each proof on its own would call a bad signature.
    if (proof.previousProof !== undefined)
      return fail(
        'unsupported-proof',
        'Proof chains (a proof with previousProof) are not verified; proof sets (independent proofs) are.',
      );
    if (proof.proofPurpose !== purpose)
      return fail(
        'wrong-proof-purpose',
        `The proof's purpose is ${String(proof.proofPurpose)}; ${purpose} is required.`,
      );
    if (typeof proof.verificationMethod !== 'string')
      return fail('proof-unreadable', 'The proof has no verificationMethod.');
    // A JCS proof signs the document with the proof's @context in place of its own: read as
    // anything else, the claims would not be what was signed.
    if (
      isJcsSuite(proof.cryptosuite) &&
      proof['@context'] !== undefined &&
      !sameList(proof['@context'], document['@context'])
    )
      return fail(
        'proof-context-mismatch',
        "The proof's @context differs from the document's: the claims read would not be the ones signed.",
      );
  }
  // Resolved first so that an unknown key is reported as such, not as the library's words.
  for (const methodId of verificationMethods) {
    try {
      await documentLoader(methodId);
    } catch {
      return fail('key-unresolvable', `The verification method ${methodId} cannot be resolved.`);
    }
  }
  const loader: DocumentLoader = (url) => documentLoader(verificationMethodId(url));
  const { proof: _all, ...unsecured } = document;
  const { DataIntegrityProof, jsigs, cryptosuites } = await proofLibraries();
  for (const proof of proofs) {
    const suite = new DataIntegrityProof({
      cryptosuite: cryptosuites[proof.cryptosuite as VerifiedCryptosuite],
    });
    let result: Awaited<ReturnType<typeof jsigs.verify>>;
    try {
      result = await jsigs.verify(structuredClone({ ...unsecured, proof }), {
        suite,
        purpose: new jsigs.purposes.ProofPurpose({ term: purpose }),
        documentLoader: loader,
      });
    } catch {
      return fail('proof-unreadable', UNREADABLE);
    }
    if (result.verified) continue;
    // The library's messages are not part of the contract: only "Invalid signature." is told apart.
    const errors = result.error?.errors ?? (result.error ? [result.error] : []);
    return errors.length === 0 || errors.every((error) => error.message === 'Invalid signature.')
      ? fail(
          'signature-mismatch',
          'The signature does not match the document (tampered, or signed by another key).',
        )
      : fail('proof-unreadable', UNREADABLE);
  }
  return { verified: true, verificationMethods, proofs };
}

// W3C Data Integrity proofs with the eddsa-rdfc-2022 cryptosuite (RDF Dataset Canonicalization,
// SHA-256, Ed25519), through Digital Bazaar's reference implementation. Verification here checks the
// signature and the proof purpose term only; whether the key may speak for the issuer or holder is
// the verifier's own check (verify.ts), so each failure is reported under the right name.
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import type { Ed25519KeyPair } from '@digitalbazaar/ed25519-multikey';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import jsigs, { type DocumentLoader } from 'jsonld-signatures';

export const CRYPTOSUITE = 'eddsa-rdfc-2022';

type Json = Record<string, unknown>;

/** Adds an `assertionMethod` proof made with `keyPair` (whose id is the verification method). */
export async function addDataIntegrityProof(
  document: Json,
  keyPair: Ed25519KeyPair,
  documentLoader: DocumentLoader,
  date = new Date(),
): Promise<Json> {
  // Proof `created` has second precision, like the published vectors.
  const suite = new DataIntegrityProof({
    signer: keyPair.signer(),
    cryptosuite: eddsaRdfc2022,
    date: new Date(Math.floor(date.getTime() / 1000) * 1000),
  });
  return jsigs.sign(structuredClone(document), {
    suite,
    purpose: new jsigs.purposes.AssertionProofPurpose(),
    documentLoader,
  });
}

const UNREADABLE =
  'The proof could not be checked (a malformed proof value, created date or verification method).';

export interface ProofVerification {
  verified: boolean;
  /** The verification methods of the proofs that were checked. */
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

/** Verifies every proof of `document`; each must be an eddsa-rdfc-2022 proof for `purpose`. */
export async function verifyDataIntegrityProofs(
  document: Json,
  purpose: string,
  documentLoader: DocumentLoader,
): Promise<ProofVerification> {
  const proofs = proofsOf(document);
  const verificationMethods = proofs.map((proof) => String(proof.verificationMethod ?? ''));
  const fail = (code: ProofVerification['code'], reason: string): ProofVerification => ({
    verified: false,
    verificationMethods,
    proofs,
    reason,
    code,
  });
  if (proofs.length === 0) return fail('no-proof', 'The document has no proof.');
  for (const proof of proofs) {
    if (proof.type !== 'DataIntegrityProof' || proof.cryptosuite !== CRYPTOSUITE) {
      return fail(
        'unsupported-proof',
        `Unsupported proof ${String(proof.type)}${proof.cryptosuite ? `/${String(proof.cryptosuite)}` : ''}: only DataIntegrityProof with ${CRYPTOSUITE} is verified.`,
      );
    }
    if (proof.proofPurpose !== purpose)
      return fail(
        'wrong-proof-purpose',
        `The proof's purpose is ${String(proof.proofPurpose)}; ${purpose} is required.`,
      );
    if (typeof proof.verificationMethod !== 'string')
      return fail('proof-unreadable', 'The proof has no verificationMethod.');
  }
  // Resolved first so that an unknown key is reported as such, not as the library's words.
  for (const methodId of verificationMethods) {
    try {
      await documentLoader(methodId);
    } catch {
      return fail('key-unresolvable', `The verification method ${methodId} cannot be resolved.`);
    }
  }
  const suite = new DataIntegrityProof({ cryptosuite: eddsaRdfc2022 });
  let result: Awaited<ReturnType<typeof jsigs.verify>>;
  try {
    result = await jsigs.verify(structuredClone(document), {
      suite,
      purpose: new jsigs.purposes.ProofPurpose({ term: purpose }),
      documentLoader,
    });
  } catch {
    return fail('proof-unreadable', UNREADABLE);
  }
  if (result.verified) return { verified: true, verificationMethods, proofs };
  // The library's messages are not part of the contract: only "Invalid signature." is told apart.
  const errors = result.error?.errors ?? (result.error ? [result.error] : []);
  return errors.length === 0 || errors.every((error) => error.message === 'Invalid signature.')
    ? fail(
        'signature-mismatch',
        'The signature does not match the document (tampered, or signed by another key).',
      )
    : fail('proof-unreadable', UNREADABLE);
}

// DID documents (W3C DID 1.0) as this service produces and reads them, and the two questions a
// verifier asks of one: which key is this verification method, and may it be used for a purpose.
import type { components } from '../../../generated/openapi/types.ts';

/**
 * A DID document, as this service publishes it (its own did:web, the did:key and did:jwk documents it
 * derives) and reads it when verifying: the contract's `DidDocument`, whose verification methods are
 * the contract's `VerificationMethod` (`Multikey` or `JsonWebKey2020`).
 */
export type DidDocument = components['schemas']['DidDocument'];

export type VerificationMethod = components['schemas']['VerificationMethod'];

export type VerificationRelationshipName =
  | 'authentication'
  | 'assertionMethod'
  | 'capabilityDelegation'
  | 'capabilityInvocation'
  | 'keyAgreement';

/** Expands a relative reference (`#key-1`) against the document's DID. */
function absolute(document: DidDocument, reference: string): string {
  return reference.startsWith('#') ? `${document.id}${reference}` : reference;
}

/** The verification method `methodId` names in `document`, whether listed or embedded in a relationship. */
export function findVerificationMethod(
  document: DidDocument,
  methodId: string,
): VerificationMethod | undefined {
  const embedded = [
    ...document.verificationMethod,
    ...(
      [
        'authentication',
        'assertionMethod',
        'capabilityDelegation',
        'capabilityInvocation',
        'keyAgreement',
      ] as const
    ).flatMap((name) =>
      (document[name] ?? []).filter((entry): entry is VerificationMethod => typeof entry === 'object'),
    ),
  ];
  return embedded.find((method) => absolute(document, method.id) === methodId);
}

/** Whether `methodId` is authorised for `relationship` in `document`. */
export function isAuthorized(
  document: DidDocument,
  methodId: string,
  relationship: VerificationRelationshipName,
): boolean {
  return (document[relationship] ?? []).some(
    (entry) => absolute(document, typeof entry === 'string' ? entry : entry.id) === methodId,
  );
}

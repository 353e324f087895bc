// DID documents (W3C DID 1.0) as this service produces and reads them, and the two questions a
// verifier asks of one: which key is this verification method, and may it be used for a purpose.
import type { components } from '../../../generated/openapi/types.ts';

/**
 * A DID document as this service publishes it (its own, and the did:key documents it derives): the
 * contract's `DidDocument`. Documents it reads (did:web) are only the looser `DidDocument` below.
 */
export type PublishedDidDocument = components['schemas']['DidDocument'];

export interface VerificationMethod {
  id: string;
  type: string;
  controller: string;
  publicKeyMultibase?: string;
  publicKeyJwk?: Record<string, unknown>;
}

export type VerificationRelationshipName =
  | 'authentication'
  | 'assertionMethod'
  | 'capabilityDelegation'
  | 'capabilityInvocation'
  | 'keyAgreement';

export interface DidDocument {
  '@context': string[];
  id: string;
  verificationMethod: VerificationMethod[];
  authentication?: (string | VerificationMethod)[];
  assertionMethod?: (string | VerificationMethod)[];
  capabilityDelegation?: (string | VerificationMethod)[];
  capabilityInvocation?: (string | VerificationMethod)[];
  keyAgreement?: (string | VerificationMethod)[];
}

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

// The checks of one credential (./verify.ts): validity (validFrom/validUntil, 60 s skew), status
// (Bitstring Status List), still-owned (this service's AssetOwnershipCredentials), the issuer's key,
// the type rules and the format (VC Data Model 2.0 + JSON-LD), and what a credential that passed
// them grants (summarize).
import { credentialStructureProblems, isDateTimeStamp, jsonLdProblems } from './data-model.ts';
import { type DidDocument, isAuthorized } from './did-document.ts';
import {
  asArray,
  type CheckSet,
  CLOCK_SKEW_MS,
  type CredentialEvaluation,
  didOf,
  type FailureReason,
  idOf,
  isObject,
  type Json,
  type VerifierContext,
} from './verify-checks.ts';

/** validFrom/validUntil (and a JWT's nbf/exp), with bounded clock skew. */
export function checkValidity(checks: CheckSet, credential: Json, now: Date, jwtClaims?: Json): void {
  const t = now.getTime();
  const from = isDateTimeStamp(credential.validFrom) ? Date.parse(credential.validFrom) : null;
  const until = isDateTimeStamp(credential.validUntil) ? Date.parse(credential.validUntil) : null;
  const nbf = typeof jwtClaims?.nbf === 'number' ? jwtClaims.nbf * 1000 : null;
  const exp = typeof jwtClaims?.exp === 'number' ? jwtClaims.exp * 1000 : null;
  let failed = false;
  for (const start of [from, nbf]) {
    if (start !== null && start > t + CLOCK_SKEW_MS) {
      checks.fail('validity', 'not-yet-valid', `Not valid yet: valid from ${new Date(start).toISOString()}.`);
      failed = true;
    }
  }
  for (const end of [until, exp]) {
    if (end !== null && end < t - CLOCK_SKEW_MS) {
      checks.fail('validity', 'expired', `Expired at ${new Date(end).toISOString()}.`);
      failed = true;
    }
  }
  if (!failed) checks.pass('validity');
}

export async function checkStatus(
  checks: CheckSet,
  credential: Json,
  context: VerifierContext,
): Promise<void> {
  const entries = asArray(credential.credentialStatus);
  if (entries.length === 0) return;
  for (const entry of entries) {
    if (!isObject(entry) || entry.type !== 'BitstringStatusListEntry') {
      checks.fail(
        'status',
        'status-unsupported',
        `Status entries of type ${String(isObject(entry) ? entry.type : entry)} are not supported (only BitstringStatusListEntry).`,
      );
      continue;
    }
    const index = Number(entry.statusListIndex);
    const purpose = String(entry.statusPurpose);
    if (
      typeof entry.statusListIndex !== 'string' ||
      !Number.isInteger(index) ||
      index < 0 ||
      typeof entry.statusListCredential !== 'string'
    ) {
      checks.fail(
        'status',
        'status-unsupported',
        'The status entry needs a statusListCredential URL and a decimal statusListIndex.',
      );
      continue;
    }
    const answer = await context.readStatus(entry.statusListCredential, index, purpose);
    if (!answer.known) checks.fail('status', 'status-unknown', answer.reason);
    else if (answer.set) {
      const [code, state]: [FailureReason, string] =
        purpose === 'suspension'
          ? ['suspended', 'suspended']
          : purpose === 'revocation'
            ? ['revoked', 'revoked']
            : ['status-flagged', `flagged (${purpose})`];
      checks.fail(
        'status',
        code,
        `The credential was ${state} (status list ${answer.listId}, index ${index}).`,
      );
    } else checks.pass('status');
  }
}

/**
 * 13.3: an AssetOwnershipCredential of this service attests a fact of the ledger at issuance; the
 * still-owned check says whether it still holds.
 */
export async function checkStillOwned(
  checks: CheckSet,
  credential: Json,
  context: VerifierContext,
): Promise<void> {
  if (idOf(credential.issuer) !== context.serviceDid) return;
  if (!typesOf(credential).includes('AssetOwnershipCredential')) return;
  for (const subject of asArray(credential.credentialSubject)) {
    const { wallet, assetId } = isObject(subject) ? subject : {};
    if (typeof wallet !== 'string' || typeof assetId !== 'string') {
      checks.fail('still-owned', 'ownership-moved', 'The credential names no wallet and asset.');
      continue;
    }
    const holds = await context.holds(wallet, assetId);
    if (holds) checks.pass('still-owned');
    else
      checks.fail(
        'still-owned',
        'ownership-moved',
        holds === null
          ? `The asset ${assetId} no longer exists.`
          : `Wallet ${wallet} no longer holds ${assetId}.`,
      );
  }
}

/** The issuer check: the key that signed is one of the issuer DID's assertion methods. */
export function checkIssuerKey(
  checks: CheckSet,
  issuer: string | null,
  methodIds: string[],
  documents: (DidDocument | null)[],
  signed: boolean,
): void {
  if (!signed) {
    checks.fail('issuer', 'not-checked', 'Not checked: no signature verified.');
    return;
  }
  if (!issuer) {
    checks.fail('issuer', 'no-issuer', 'The credential names no issuer.');
    return;
  }
  methodIds.forEach((methodId, index) => {
    const document = documents[index];
    if (didOf(methodId) !== issuer)
      checks.fail(
        'issuer',
        'key-not-issuers',
        `Signed by ${methodId}, which is not a key of the issuer ${issuer}.`,
      );
    else if (!document || !isAuthorized(document, methodId, 'assertionMethod')) {
      checks.fail('issuer', 'key-not-issuers', `${methodId} is not an assertionMethod of ${issuer}.`);
    } else checks.pass('issuer');
  });
}

const STATUS_LIST_TYPE = 'BitstringStatusListCredential';

const typesOf = (credential: Json): string[] =>
  asArray(credential.type).filter((type): type is string => typeof type === 'string');

/** A status list credential is public: it must never pass for any other kind of credential. */
export function typeProblems(credential: Json): string[] {
  const types = typesOf(credential);
  const others = types.filter((type) => type !== 'VerifiableCredential' && type !== STATUS_LIST_TYPE);
  return types.includes(STATUS_LIST_TYPE) && others.length
    ? [`A ${STATUS_LIST_TYPE} cannot also be a ${others.join(', ')}`]
    : [];
}

export function summarize(
  credential: Json,
  context: VerifierContext,
  checks: CheckSet,
): CredentialEvaluation {
  const issuer = idOf(credential.issuer);
  const types = typesOf(credential);
  const subjects = asArray(credential.credentialSubject)
    .map(idOf)
    .filter((id): id is string => id !== null);
  let permissions: string[] = [];
  if (
    issuer === context.serviceDid &&
    types.includes('PlayerRoleCredential') &&
    !types.includes(STATUS_LIST_TYPE)
  ) {
    permissions = asArray(
      asArray(credential.credentialSubject).map((subject) =>
        isObject(subject) ? subject.permissions : [],
      )[0],
    ).filter((permission): permission is string => typeof permission === 'string');
  }
  return { checks, issuer, subjects, types, permissions };
}

/** The Data Model rules and JSON-LD processing, each failing `format` under its own code. */
export async function checkFormat(
  checks: CheckSet,
  credential: Json,
  context: VerifierContext,
): Promise<void> {
  checks.failAll('format', 'malformed', credentialStructureProblems(credential, { mode: 'verify' }));
  checks.failAll('format', 'invalid-json-ld', await jsonLdProblems(credential, context.documentLoader));
}

// Verification of credentials and presentations, answering every check with its result:
// format (VC Data Model 2.0 + JSON-LD), signature (Data Integrity eddsa-rdfc-2022, ecdsa-rdfc-2019
// or eddsa-jcs-2022, or JOSE), issuer (the key is an assertionMethod of the issuer), validity
// (validFrom/validUntil, 60 s skew), status (Bitstring Status List), holder-binding (presentations:
// the holder signed it for this verifier's challenge and domain) and permissions (granted by this
// service's PlayerRoleCredentials, to their subject, presenting them bound to the challenge). A
// check that cannot apply is left out; nothing throws for a bad credential: it fails its checks.
// VC Data Model 2.0 lets a presentation have no holder and a holder present credentials about
// others: such a presentation verifies, its holder-binding check failing as advisory (it counts
// for granting permissions only, not for `verified`).
import type { DocumentLoader } from 'jsonld-signatures';
import type { components } from '../../../generated/openapi/types.ts';
import {
  credentialStructureProblems,
  isDateTimeStamp,
  isEnvelopedCredential,
  jsonLdProblems,
  presentationStructureProblems,
  VC_V1_CONTEXT,
  VC_V2_CONTEXT,
} from './data-model.ts';
import { type DidDocument, isAuthorized } from './did-document.ts';
import type { DidResolver } from './did-resolver.ts';
import type { JsonLdOutcome, JsonLdTask } from './jsonld-work.ts';
import { decodeJose, verifyJoseSignature } from './vc-jose.ts';

export const CLOCK_SKEW_MS = 60_000;

type Json = Record<string, unknown>;

export const CHECK_ORDER = [
  'format',
  'signature',
  'issuer',
  'validity',
  'status',
  'still-owned',
  'holder-binding',
  'permissions',
] as const;
export type CheckName = (typeof CHECK_ORDER)[number];

/**
 * Why a check failed, as a stable code (the contract's VerificationCheck `reason` enum): clients
 * branch on it; `detail` is words for a developer and never a library's own message.
 */
export const FAILURE_REASONS = [
  'malformed',
  'context-not-allowed',
  'invalid-json-ld',
  'type-conflict',
  'no-proof',
  'unsupported-proof',
  'proof-context-mismatch',
  'wrong-proof-purpose',
  'proof-unreadable',
  'key-unresolvable',
  'algorithm-not-allowed',
  'signature-mismatch',
  'not-checked',
  'no-issuer',
  'key-not-issuers',
  'not-yet-valid',
  'expired',
  'revoked',
  'suspended',
  'status-flagged',
  'status-unknown',
  'status-unsupported',
  'no-holder',
  'holder-not-signer',
  'no-challenge',
  'challenge-mismatch',
  'domain-mismatch',
  'holder-not-subject',
  'not-holder-bound',
  'not-granted',
  'bare-credential',
  'ownership-moved',
  'envelope-unsupported',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/**
 * One check of a verification (the contract's `VerificationCheck`): `advisory` marks a failed check
 * that does not make the result unverified (holder binding VC Data Model 2.0 does not require);
 * `reason` is the first failure's code.
 */
export type VerificationCheck = components['schemas']['VerificationCheck'];

interface Failure {
  code: FailureReason;
  text: string;
  advisory?: boolean;
}

export interface VerifyRequest {
  jwt?: string;
  credential?: Json;
  presentation?: Json | string;
  challenge?: string;
  domain?: string;
  requiredPermissions?: string[];
}

export type VerifyResult = components['schemas']['VerifyResult'];

/** What a status list says about one entry. */
export type StatusAnswer = { known: true; set: boolean; listId: string } | { known: false; reason: string };

export interface VerifierContext {
  resolver: DidResolver;
  documentLoader: DocumentLoader;
  /** This service's DID: only its PlayerRoleCredentials grant permissions. */
  serviceDid: string;
  readStatus(statusListCredential: string, index: number, purpose: string): Promise<StatusAnswer>;
  /** The JSON-LD work of a Data Integrity document (on a worker thread when the service has them). */
  jsonLd(task: Pick<JsonLdTask, 'document' | 'purpose' | 'skip'>): Promise<JsonLdOutcome>;
  /** Whether the wallet holds the asset on this service's ledger now; null: no such asset. */
  holds(wallet: string, assetId: string): Promise<boolean | null>;
  now: () => Date;
}

/** Per check: an empty list when passed, else why it failed. */
class CheckSet {
  private readonly results = new Map<CheckName, Failure[]>();

  pass(name: CheckName): void {
    if (!this.results.has(name)) this.results.set(name, []);
  }

  fail(name: CheckName, code: FailureReason, text: string): void {
    this.results.set(name, [...(this.results.get(name) ?? []), { code, text }]);
  }

  /** A failure that is reported but does not make the result unverified. */
  advise(name: CheckName, code: FailureReason, text: string): void {
    this.results.set(name, [...(this.results.get(name) ?? []), { code, text, advisory: true }]);
  }

  /** One failure listing `problems`, if there are any. */
  failAll(name: CheckName, code: FailureReason, problems: string[]): void {
    if (problems.length) this.fail(name, code, problems.join('; '));
  }

  passed(name: CheckName): boolean {
    return (this.results.get(name) ?? []).length === 0;
  }

  /** Every check passed, advisory failures aside. */
  get allPassed(): boolean {
    return [...this.results.values()].every((reasons) => reasons.every((reason) => reason.advisory));
  }

  /** Adds another set's results, its reasons prefixed (e.g. with the credential's position). */
  merge(other: CheckSet, prefix: string): void {
    for (const [name, reasons] of other.results) {
      if (reasons.length === 0) this.pass(name);
      for (const { code, text, advisory } of reasons) {
        if (advisory) this.advise(name, code, `${prefix}: ${text}`);
        else this.fail(name, code, `${prefix}: ${text}`);
      }
    }
  }

  list(): VerificationCheck[] {
    return CHECK_ORDER.filter((name) => this.results.has(name)).map((name) => {
      const failures = this.results.get(name) as Failure[];
      if (failures.length === 0) return { name, passed: true };
      const blocking = failures.filter((failure) => !failure.advisory);
      return {
        name,
        passed: false,
        ...(blocking.length ? {} : { advisory: true }),
        reason: (blocking[0] ?? failures[0]).code,
        detail: failures.map((failure) => failure.text).join(' '),
      };
    });
  }
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const asArray = (value: unknown): unknown[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
const idOf = (value: unknown): string | null =>
  typeof value === 'string' ? value : isObject(value) && typeof value.id === 'string' ? value.id : null;
const didOf = (methodId: string) => methodId.split('#')[0];

/** JWT claims a JOSE-secured credential or presentation may carry beside the document (not JSON-LD terms). */
const JWT_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'nonce', 'cnf'];

function withoutJwtClaims(payload: Json): Json {
  return Object.fromEntries(Object.entries(payload).filter(([name]) => !JWT_CLAIMS.includes(name)));
}

interface CredentialEvaluation {
  checks: CheckSet;
  issuer: string | null;
  subjects: string[];
  types: string[];
  /** Permissions this credential grants if it verified and is this service's role credential. */
  permissions: string[];
}

/** validFrom/validUntil (and a JWT's nbf/exp), with bounded clock skew. */
function checkValidity(checks: CheckSet, credential: Json, now: Date, jwtClaims?: Json): void {
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

async function checkStatus(checks: CheckSet, credential: Json, context: VerifierContext): Promise<void> {
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
async function checkStillOwned(checks: CheckSet, credential: Json, context: VerifierContext): Promise<void> {
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
function checkIssuerKey(
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
function typeProblems(credential: Json): string[] {
  const types = typesOf(credential);
  const others = types.filter((type) => type !== 'VerifiableCredential' && type !== STATUS_LIST_TYPE);
  return types.includes(STATUS_LIST_TYPE) && others.length
    ? [`A ${STATUS_LIST_TYPE} cannot also be a ${others.join(', ')}`]
    : [];
}

function summarize(credential: Json, context: VerifierContext, checks: CheckSet): CredentialEvaluation {
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
async function checkFormat(checks: CheckSet, credential: Json, context: VerifierContext): Promise<void> {
  checks.failAll('format', 'malformed', credentialStructureProblems(credential, { mode: 'verify' }));
  checks.failAll('format', 'invalid-json-ld', await jsonLdProblems(credential, context.documentLoader));
}

/** A JSON-LD credential with embedded Data Integrity proof(s). */
async function evaluateLinkedDataCredential(
  credential: Json,
  context: VerifierContext,
): Promise<CredentialEvaluation> {
  const checks = new CheckSet();
  const { refused, jsonLd, covered, proofs } = await context.jsonLd({
    document: credential,
    purpose: 'assertionMethod',
    skip: [],
  });
  // Nothing is read from a document whose contexts are unknown: its JSON may not mean what it says.
  checks.failAll('format', 'context-not-allowed', refused);
  if (!refused.length) {
    checks.failAll('format', 'malformed', credentialStructureProblems(credential, { mode: 'verify' }));
    checks.failAll('format', 'invalid-json-ld', jsonLd);
    if (!covered) checks.fail('format', 'invalid-json-ld', 'JSON-LD: the document cannot be compacted.');
  }
  if (covered) checks.failAll('format', 'type-conflict', typeProblems(covered));
  checks.pass('format');
  if (!proofs)
    checks.fail('signature', 'not-checked', 'Not checked: the document uses contexts that are not accepted.');
  else if (proofs.verified) checks.pass('signature');
  else checks.fail('signature', proofs.code as FailureReason, proofs.reason as string);
  if (!covered || !proofs) return { checks, issuer: null, subjects: [], types: [], permissions: [] };
  const issuer = idOf(covered.issuer);
  const documents = await Promise.all(
    proofs.verificationMethods.map((methodId) => context.resolver.resolve(didOf(methodId)).catch(() => null)),
  );
  checkIssuerKey(checks, issuer, proofs.verificationMethods, documents, proofs.verified);
  checkValidity(checks, covered, context.now());
  await checkStatus(checks, covered, context);
  await checkStillOwned(checks, covered, context);
  return summarize(covered, context, checks);
}

/** A VC-JOSE `vc+jwt`, or a VC Data Model 1.1 JWT-VC (the credential in a `vc` claim). */
async function evaluateJwtCredential(jwt: string, context: VerifierContext): Promise<CredentialEvaluation> {
  const checks = new CheckSet();
  let decoded: ReturnType<typeof decodeJose>;
  try {
    decoded = decodeJose(jwt);
  } catch (error) {
    checks.fail('format', 'malformed', (error as Error).message);
    return { checks, issuer: null, subjects: [], types: [], permissions: [] };
  }
  const { header, payload } = decoded;
  const legacy = isObject(payload.vc);
  let credential: Json;
  if (legacy) {
    // JWT-VC 1.1: registered claims carry issuer, subject, id and validity.
    const vc = payload.vc as Json;
    const subject = isObject(vc.credentialSubject)
      ? { ...vc.credentialSubject, ...(typeof payload.sub === 'string' ? { id: payload.sub } : {}) }
      : vc.credentialSubject;
    credential = {
      ...vc,
      issuer: payload.iss ?? vc.issuer,
      credentialSubject: subject,
      ...(typeof payload.jti === 'string' ? { id: payload.jti } : {}),
    };
  } else {
    credential = withoutJwtClaims(payload);
  }
  // A JWT-VC (Data Model 1.1 JWT encoding) is plain JSON: no JSON-LD processing is expected of it.
  const typ = header.typ;
  if (!legacy && typ !== 'vc+jwt' && typ !== 'application/vc+jwt')
    checks.fail('format', 'malformed', `The JOSE header typ is ${String(typ)}; a credential is typ vc+jwt.`);
  if (legacy && typ !== undefined && typ !== 'JWT')
    checks.fail('format', 'malformed', `The JOSE header typ of a JWT-VC is JWT, not ${String(typ)}.`);
  if (legacy) {
    const baseContext = asArray(credential['@context'])[0] === VC_V2_CONTEXT ? VC_V2_CONTEXT : VC_V1_CONTEXT;
    checks.failAll(
      'format',
      'malformed',
      credentialStructureProblems(credential, { mode: 'verify', baseContext }),
    );
  } else await checkFormat(checks, credential, context);
  checks.failAll('format', 'type-conflict', typeProblems(credential));
  checks.pass('format');

  const issuer = idOf(credential.issuer);
  const signature = await verifyJoseSignature(jwt, header, issuer, 'assertionMethod', context.resolver);
  if (signature.verified) checks.pass('signature');
  else checks.fail('signature', signature.code as FailureReason, signature.reason as string);
  checkIssuerKey(
    checks,
    issuer,
    signature.methodId ? [signature.methodId] : [],
    [signature.document],
    signature.verified,
  );
  if (!legacy && payload.iss !== undefined && payload.iss !== issuer) {
    checks.fail(
      'issuer',
      'key-not-issuers',
      `The JWT iss ${String(payload.iss)} is not the credential's issuer ${String(issuer)}.`,
    );
  }
  checkValidity(checks, credential, context.now(), payload);
  await checkStatus(checks, credential, context);
  await checkStillOwned(checks, credential, context);
  return summarize(credential, context, checks);
}

/**
 * The media types of an envelope's `data:` URL (VC Data Model 2.0 §4.13, VC-JOSE-COSE) that this
 * service opens: JOSE compact JWS only. `application/jwt` is what VC Data Model 1.1 JWTs (a `vc` or
 * `vp` claim) are labelled with, as in the W3C test suite. SD-JWT and COSE envelopes are refused
 * with `envelope-unsupported`.
 */
const ENVELOPES = {
  credential: { type: 'EnvelopedVerifiableCredential', media: ['vc+jwt', 'vc-ld+jwt', 'jwt'] },
  presentation: { type: 'EnvelopedVerifiablePresentation', media: ['vp+jwt', 'vp-ld+jwt', 'jwt'] },
} as const;

type Opened = { jwt: string } | { code: FailureReason; text: string };

/** The compact JWS inside an enveloped credential or presentation, or why it cannot be opened. */
function openEnvelope(envelope: Json, kind: keyof typeof ENVELOPES): Opened {
  const { type, media } = ENVELOPES[kind];
  if (asArray(envelope['@context'])[0] !== VC_V2_CONTEXT)
    return { code: 'malformed', text: `An ${type}'s @context must start with ${VC_V2_CONTEXT}.` };
  const match = typeof envelope.id === 'string' ? /^data:([^,;]*)(;[^,]*)?,(.*)$/s.exec(envelope.id) : null;
  if (!match) return { code: 'malformed', text: `An ${type}'s id must be a data: URL.` };
  const [, mediaType, parameters, data] = match;
  // `;base64url` (older VC-JOSE drafts, the W3C suite's inputs) names the JWS's own encoding.
  if (
    (parameters && parameters !== ';base64url') ||
    !(media as readonly string[]).includes(mediaType.replace(/^application\//, ''))
  )
    return {
      code: 'envelope-unsupported',
      text: `A ${mediaType}${parameters ?? ''} envelope is not verified here; only ${media.map((m) => `application/${m}`).join(', ')} (a compact JWS) is.`,
    };
  return { jwt: data };
}

const failedEvaluation = (code: FailureReason, text: string): CredentialEvaluation => {
  const checks = new CheckSet();
  checks.fail('format', code, text);
  return { checks, issuer: null, subjects: [], types: [], permissions: [] };
};

async function evaluateEnvelopedCredential(
  envelope: Json,
  context: VerifierContext,
): Promise<CredentialEvaluation> {
  const opened = openEnvelope(envelope, 'credential');
  return 'jwt' in opened
    ? evaluateJwtCredential(opened.jwt, context)
    : failedEvaluation(opened.code, opened.text);
}

async function evaluateEmbedded(
  entry: unknown,
  context: VerifierContext,
  legacy: boolean,
): Promise<CredentialEvaluation> {
  if (isEnvelopedCredential(entry)) return evaluateEnvelopedCredential(entry, context);
  // A VC Data Model 1.1 JWT presentation carries its credentials as JWT strings.
  if (legacy && typeof entry === 'string') return evaluateJwtCredential(entry, context);
  if (isObject(entry)) return evaluateLinkedDataCredential(entry, context);
  return failedEvaluation('malformed', 'A presented credential must be an object.');
}

interface HolderProof {
  signed: boolean;
  methodIds: string[];
  documents: (DidDocument | null)[];
  challenge: unknown;
  domain: unknown;
}

/**
 * Whether the presentation is bound to its holder and to this verifier's request. Blocking
 * failures: a named holder that did not sign it, or a proof made for another challenge or domain
 * than the verifier's (a replay). Advisory (VC Data Model 2.0 allows them, but they bind nothing):
 * no holder, or no challenge from the verifier. Returns whether it is holder-bound.
 */
function checkHolderBinding(
  checks: CheckSet,
  holder: string | null,
  proof: HolderProof,
  request: VerifyRequest,
): boolean {
  let bound = true;
  const fail = (code: FailureReason, reason: string) => {
    checks.fail('holder-binding', code, reason);
    bound = false;
  };
  const advise = (code: FailureReason, reason: string) => {
    checks.advise('holder-binding', code, reason);
    bound = false;
  };
  if (!holder)
    advise('no-holder', 'The presentation names no holder: it may verify, but it is bound to no one.');
  else if (!proof.signed)
    fail('holder-not-signer', 'The holder did not sign the presentation (no valid holder proof).');
  else {
    proof.methodIds.forEach((methodId, index) => {
      const document = proof.documents[index];
      if (didOf(methodId) !== holder)
        fail('holder-not-signer', `Signed by ${methodId}, not by the holder ${holder}.`);
      else if (!document || !isAuthorized(document, methodId, 'authentication'))
        fail('holder-not-signer', `${methodId} is not an authentication key of ${holder}.`);
    });
  }
  if (request.challenge === undefined)
    advise(
      'no-challenge',
      'No challenge was given: without a verifier challenge a presentation could be a replay, so it binds no one.',
    );
  else if (proof.challenge !== request.challenge)
    fail('challenge-mismatch', 'The presentation was made for another challenge.');
  if (request.domain !== undefined) {
    const domains = asArray(proof.domain);
    if (!domains.includes(request.domain))
      fail(
        'domain-mismatch',
        `The presentation was made for another domain (${domains.join(', ') || 'none'}).`,
      );
  }
  if (bound) checks.pass('holder-binding');
  return bound;
}

/**
 * 13.3 and 19.1: a role credential's permissions belong to its subject, so they are granted only
 * when that subject presents it, bound to this verifier's challenge.
 */
function grantedByPresentation(
  checks: CheckSet,
  bound: boolean,
  holder: string | null,
  credentials: CredentialEvaluation[],
  required: string[] | undefined,
): string[] {
  const valid = credentials.filter((credential) => credential.checks.allPassed);
  const granted = bound
    ? valid
        .filter((credential) => holder && credential.subjects.includes(holder))
        .flatMap((c) => c.permissions)
    : [];
  if (required === undefined) return granted;
  const missing = required.filter((permission) => !granted.includes(permission));
  if (missing.length === 0) checks.pass('permissions');
  else if (!bound)
    checks.fail(
      'permissions',
      'not-holder-bound',
      `Not granted: ${missing.join(', ')}. Only a presentation signed by its holder for your challenge grants permissions.`,
    );
  else if (
    valid.some(
      (c) => !c.subjects.includes(holder as string) && missing.some((p) => c.permissions.includes(p)),
    )
  )
    checks.fail(
      'permissions',
      'holder-not-subject',
      `Not granted: ${missing.join(', ')}. A role credential grants its permissions only to its own subject.`,
    );
  else checks.fail('permissions', 'not-granted', `Not granted: ${missing.join(', ')}.`);
  return granted;
}

async function evaluatePresentation(
  presentation: Json | string,
  request: VerifyRequest,
  context: VerifierContext,
): Promise<VerifyResult> {
  const checks = new CheckSet();
  let document: Json;
  let holderProof: HolderProof;
  let outcome: JsonLdOutcome | null = null;
  let legacy = false;
  if (typeof presentation === 'string') {
    let decoded: ReturnType<typeof decodeJose>;
    try {
      decoded = decodeJose(presentation);
    } catch (error) {
      checks.fail('format', 'malformed', (error as Error).message);
      return result(checks, 'presentation', null, null, [], []);
    }
    const { header, payload } = decoded;
    legacy = isObject(payload.vp);
    if (legacy) {
      // VC Data Model 1.1 JWT presentation: the presentation is the `vp` claim, `iss` its holder.
      const vp = payload.vp as Json;
      document = { ...vp, holder: vp.holder ?? payload.iss };
      if (header.typ !== undefined && header.typ !== 'JWT')
        checks.fail(
          'format',
          'malformed',
          `The JOSE header typ of a JWT-VP is JWT, not ${String(header.typ)}.`,
        );
      if (payload.iss !== undefined && idOf(vp.holder) !== null && payload.iss !== idOf(vp.holder))
        checks.fail('format', 'malformed', 'The JWT iss is not the presentation holder.');
    } else {
      document = payload;
      if (header.typ !== 'vp+jwt' && header.typ !== 'application/vp+jwt') {
        checks.fail(
          'format',
          'malformed',
          `The JOSE header typ is ${String(header.typ)}; a presentation is typ vp+jwt.`,
        );
      }
    }
    const signature = await verifyJoseSignature(
      presentation,
      header,
      idOf(document.holder),
      'authentication',
      context.resolver,
    );
    if (signature.verified) checks.pass('signature');
    else checks.fail('signature', signature.code as FailureReason, `Presentation: ${signature.reason}`);
    holderProof = {
      signed: signature.verified,
      methodIds: signature.methodId ? [signature.methodId] : [],
      documents: [signature.document],
      challenge: payload.nonce,
      domain: payload.aud,
    };
  } else {
    document = presentation;
    outcome = await context.jsonLd({ document, purpose: 'authentication', skip: ['verifiableCredential'] });
    const { proofs } = outcome;
    if (!proofs)
      checks.fail(
        'signature',
        'not-checked',
        'Not checked: the presentation uses contexts that are not accepted.',
      );
    else if (proofs.verified) checks.pass('signature');
    else checks.fail('signature', proofs.code as FailureReason, `Presentation: ${proofs.reason}`);
    holderProof = {
      signed: proofs?.verified ?? false,
      methodIds: proofs?.verificationMethods ?? [],
      documents: await Promise.all(
        (proofs?.verificationMethods ?? []).map((id) =>
          context.resolver.resolve(didOf(id)).catch(() => null),
        ),
      ),
      challenge: proofs?.proofs[0]?.challenge,
      domain: proofs?.proofs[0]?.domain,
    };
  }
  const unsecured = legacy
    ? {
        ...document,
        // Its JWT strings stand where VC Data Model 2.0 puts enveloped credentials.
        verifiableCredential: asArray(document.verifiableCredential).map((entry) =>
          typeof entry === 'string'
            ? {
                '@context': VC_V2_CONTEXT,
                type: 'EnvelopedVerifiableCredential',
                id: `data:application/jwt,${entry}`,
              }
            : entry,
        ),
      }
    : typeof presentation === 'string'
      ? withoutJwtClaims(document)
      : document;
  // A Data Integrity presentation is read as its proof covers it (its credentials are each
  // checked the same way on their own); a vp+jwt's payload is itself what was signed.
  let holder = idOf(document.holder);
  const refused = outcome?.refused ?? [];
  checks.failAll('format', 'context-not-allowed', refused);
  if (!refused.length) {
    const base = legacy && asArray(document['@context'])[0] === VC_V1_CONTEXT ? VC_V1_CONTEXT : VC_V2_CONTEXT;
    checks.failAll('format', 'malformed', presentationStructureProblems(unsecured, base));
    // Like a JWT-VC, a JWT-VP (Data Model 1.1 JWT encoding) is plain JSON: no JSON-LD processing.
    if (!legacy)
      checks.failAll(
        'format',
        'invalid-json-ld',
        outcome ? outcome.jsonLd : await jsonLdProblems(unsecured, context.documentLoader),
      );
  }
  if (outcome) {
    if (!refused.length && !outcome.covered)
      checks.fail('format', 'invalid-json-ld', 'JSON-LD: the presentation cannot be compacted.');
    holder = outcome.covered ? idOf(outcome.covered.holder) : null;
  }
  checks.pass('format');

  const credentials = await Promise.all(
    asArray(document.verifiableCredential).map((entry) => evaluateEmbedded(entry, context, legacy)),
  );
  for (const [index, credential] of credentials.entries()) {
    checks.merge(credential.checks, `verifiableCredential[${index}]`);
  }
  const bound = checkHolderBinding(checks, holder, holderProof, request);
  const granted = grantedByPresentation(checks, bound, holder, credentials, request.requiredPermissions);
  const issuers = [...new Set(credentials.map((credential) => credential.issuer))];
  const types = [...new Set(credentials.flatMap((credential) => credential.types))];
  return result(checks, 'presentation', issuers.length === 1 ? issuers[0] : null, holder, types, granted);
}

function result(
  checks: CheckSet,
  kind: VerifyResult['kind'],
  issuer: string | null,
  subject: string | null,
  types: string[],
  granted: string[],
): VerifyResult {
  return {
    verified: checks.allPassed,
    kind,
    issuer,
    subject,
    types,
    checks: checks.list(),
    grantedPermissions: [...new Set(granted)],
  };
}

const isEnvelopedPresentation = (value: unknown): value is Json =>
  isObject(value) && asArray(value.type).includes(ENVELOPES.presentation.type);

/** Verifies what the request carries (exactly one of jwt, credential, presentation). */
export async function verify(request: VerifyRequest, context: VerifierContext): Promise<VerifyResult> {
  const { presentation } = request;
  if (isEnvelopedPresentation(presentation)) {
    const opened = openEnvelope(presentation, 'presentation');
    if ('jwt' in opened) return evaluatePresentation(opened.jwt, request, context);
    const { checks } = failedEvaluation(opened.code, opened.text);
    return result(checks, 'presentation', null, null, [], []);
  }
  if (presentation !== undefined) return evaluatePresentation(presentation, request, context);
  if (request.jwt !== undefined) {
    // A vp+jwt (or a Data Model 1.1 JWT with a `vp` claim) sent as `jwt` is a presentation.
    try {
      const { header, payload } = decodeJose(request.jwt);
      if (header.typ === 'vp+jwt' || isObject(payload.vp))
        return evaluatePresentation(request.jwt, request, context);
    } catch {
      // Reported as a format failure below.
    }
  }
  const evaluation =
    request.jwt !== undefined
      ? await evaluateJwtCredential(request.jwt, context)
      : isEnvelopedCredential(request.credential)
        ? await evaluateEnvelopedCredential(request.credential, context)
        : await evaluateLinkedDataCredential(request.credential as Json, context);
  // 13.3: a credential on its own is a bearer token (whoever holds a copy could send it): it
  // verifies, but only a holder-bound presentation for the verifier's challenge grants anything.
  if (request.requiredPermissions !== undefined && request.requiredPermissions.length > 0) {
    evaluation.checks.fail(
      'permissions',
      'bare-credential',
      'A credential on its own grants nothing: send it in a presentation signed by its subject for your challenge.',
    );
  } else if (request.requiredPermissions !== undefined) evaluation.checks.pass('permissions');
  return result(
    evaluation.checks,
    'credential',
    evaluation.issuer,
    evaluation.subjects[0] ?? null,
    evaluation.types,
    [],
  );
}

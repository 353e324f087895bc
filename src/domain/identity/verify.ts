// Verification of credentials and presentations, answering every check with its result:
// format (VC Data Model 2.0 + JSON-LD), signature (Data Integrity eddsa-rdfc-2022, or JOSE),
// issuer (the key is an assertionMethod of the issuer), validity (validFrom/validUntil, 60 s skew),
// status (Bitstring Status List), holder-binding (presentations: holder signed it for this
// challenge and domain, and is every credential's subject) and permissions (granted by this
// service's PlayerRoleCredentials). A check that cannot apply is left out; nothing throws for a
// bad credential: it fails its checks.
import type { DocumentLoader } from 'jsonld-signatures';
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
  'not-granted',
  'bare-credential',
  'ownership-moved',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export interface VerificationCheck {
  name: CheckName;
  passed: boolean;
  /** When failed: the first failure's code. */
  reason?: FailureReason;
  detail?: string;
}

interface Failure {
  code: FailureReason;
  text: string;
}

export interface VerifyRequest {
  jwt?: string;
  credential?: Json;
  presentation?: Json | string;
  challenge?: string;
  domain?: string;
  requiredPermissions?: string[];
}

export interface VerifyResult {
  verified: boolean;
  kind: 'credential' | 'presentation';
  issuer: string | null;
  subject: string | null;
  types: string[];
  checks: VerificationCheck[];
  grantedPermissions: string[];
}

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

  /** One failure listing `problems`, if there are any. */
  failAll(name: CheckName, code: FailureReason, problems: string[]): void {
    if (problems.length) this.fail(name, code, problems.join('; '));
  }

  passed(name: CheckName): boolean {
    return (this.results.get(name) ?? []).length === 0;
  }

  get allPassed(): boolean {
    return [...this.results.values()].every((reasons) => reasons.length === 0);
  }

  /** Adds another set's results, its reasons prefixed (e.g. with the credential's position). */
  merge(other: CheckSet, prefix: string): void {
    for (const [name, reasons] of other.results) {
      if (reasons.length === 0) this.pass(name);
      for (const { code, text } of reasons) this.fail(name, code, `${prefix}: ${text}`);
    }
  }

  list(): VerificationCheck[] {
    return CHECK_ORDER.filter((name) => this.results.has(name)).map((name) => {
      const failures = this.results.get(name) as Failure[];
      return failures.length === 0
        ? { name, passed: true }
        : {
            name,
            passed: false,
            reason: failures[0].code,
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

/** The secured string of an EnvelopedVerifiableCredential (`data:application/vc+jwt,<jwt>`). */
function envelopedJwt(id: string): string | null {
  const match = /^data:application\/(vc\+jwt|vc-ld\+jwt|vc\+sd-jwt)(;base64url)?,(.+)$/.exec(id);
  return match ? match[3] : null;
}

async function evaluateEmbedded(entry: unknown, context: VerifierContext): Promise<CredentialEvaluation> {
  if (isEnvelopedCredential(entry)) {
    const jwt = typeof entry.id === 'string' ? envelopedJwt(entry.id) : null;
    if (jwt) return evaluateJwtCredential(jwt, context);
    const checks = new CheckSet();
    checks.fail(
      'format',
      'malformed',
      'An EnvelopedVerifiableCredential must carry a data:application/vc+jwt URL.',
    );
    return { checks, issuer: null, subjects: [], types: [], permissions: [] };
  }
  if (isObject(entry)) return evaluateLinkedDataCredential(entry, context);
  const checks = new CheckSet();
  checks.fail('format', 'malformed', 'A presented credential must be an object.');
  return { checks, issuer: null, subjects: [], types: [], permissions: [] };
}

interface HolderProof {
  signed: boolean;
  methodIds: string[];
  documents: (DidDocument | null)[];
  challenge: unknown;
  domain: unknown;
}

function checkHolderBinding(
  checks: CheckSet,
  holder: string | null,
  proof: HolderProof,
  credentials: CredentialEvaluation[],
  request: VerifyRequest,
): void {
  let failed = false;
  const fail = (code: FailureReason, reason: string) => {
    checks.fail('holder-binding', code, reason);
    failed = true;
  };
  if (!holder) fail('no-holder', 'The presentation names no holder.');
  if (!proof.signed)
    fail('holder-not-signer', 'The holder did not sign the presentation (no valid holder proof).');
  else if (holder) {
    proof.methodIds.forEach((methodId, index) => {
      const document = proof.documents[index];
      if (didOf(methodId) !== holder)
        fail('holder-not-signer', `Signed by ${methodId}, not by the holder ${holder}.`);
      else if (!document || !isAuthorized(document, methodId, 'authentication'))
        fail('holder-not-signer', `${methodId} is not an authentication key of ${holder}.`);
    });
  }
  if (request.challenge === undefined)
    fail(
      'no-challenge',
      'No challenge was given: a presentation is only accepted for a verifier challenge, or it could be replayed.',
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
  credentials.forEach((credential, index) => {
    if (holder && !credential.subjects.includes(holder))
      fail('holder-not-subject', `The holder is not the subject of verifiableCredential[${index}].`);
  });
  if (!failed) checks.pass('holder-binding');
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
  if (typeof presentation === 'string') {
    let decoded: ReturnType<typeof decodeJose>;
    try {
      decoded = decodeJose(presentation);
    } catch (error) {
      checks.fail('format', 'malformed', (error as Error).message);
      return result(checks, 'presentation', null, null, [], []);
    }
    document = decoded.payload;
    if (decoded.header.typ !== 'vp+jwt' && decoded.header.typ !== 'application/vp+jwt') {
      checks.fail(
        'format',
        'malformed',
        `The JOSE header typ is ${String(decoded.header.typ)}; a presentation is typ vp+jwt.`,
      );
    }
    const signature = await verifyJoseSignature(
      presentation,
      decoded.header,
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
      challenge: document.nonce,
      domain: document.aud,
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
  const unsecured = typeof presentation === 'string' ? withoutJwtClaims(document) : document;
  // A Data Integrity presentation is read as its proof covers it (its credentials are each
  // checked the same way on their own); a vp+jwt's payload is itself what was signed.
  let holder = idOf(document.holder);
  const refused = outcome?.refused ?? [];
  checks.failAll('format', 'context-not-allowed', refused);
  if (!refused.length) {
    checks.failAll('format', 'malformed', presentationStructureProblems(unsecured));
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
    asArray(document.verifiableCredential).map((entry) => evaluateEmbedded(entry, context)),
  );
  for (const [index, credential] of credentials.entries()) {
    checks.merge(credential.checks, `verifiableCredential[${index}]`);
  }
  checkHolderBinding(checks, holder, holderProof, credentials, request);

  const bound = checks.passed('holder-binding');
  const granted = bound
    ? credentials
        .filter((credential) => credential.checks.allPassed)
        .flatMap((credential) => credential.permissions)
    : [];
  const issuers = [...new Set(credentials.map((credential) => credential.issuer))];
  const types = [...new Set(credentials.flatMap((credential) => credential.types))];
  checkPermissions(checks, granted, request.requiredPermissions);
  return result(checks, 'presentation', issuers.length === 1 ? issuers[0] : null, holder, types, granted);
}

function checkPermissions(checks: CheckSet, granted: string[], required: string[] | undefined): void {
  if (required === undefined) return;
  const missing = required.filter((permission) => !granted.includes(permission));
  if (missing.length) checks.fail('permissions', 'not-granted', `Not granted: ${missing.join(', ')}.`);
  else checks.pass('permissions');
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

/** Verifies what the request carries (exactly one of jwt, credential, presentation). */
export async function verify(request: VerifyRequest, context: VerifierContext): Promise<VerifyResult> {
  if (request.presentation !== undefined) return evaluatePresentation(request.presentation, request, context);
  if (request.jwt !== undefined) {
    // A vp+jwt sent as `jwt` is a presentation.
    try {
      if (decodeJose(request.jwt).header.typ === 'vp+jwt')
        return evaluatePresentation(request.jwt, request, context);
    } catch {
      // Reported as a format failure below.
    }
  }
  const evaluation =
    request.jwt !== undefined
      ? await evaluateJwtCredential(request.jwt, context)
      : await evaluateLinkedDataCredential(request.credential as Json, context);
  // 13.3: a credential on its own is a bearer token (whoever holds a copy could send it): it
  // verifies, but only a holder-bound presentation for the verifier's challenge grants anything.
  if (request.requiredPermissions !== undefined && request.requiredPermissions.length > 0) {
    evaluation.checks.fail(
      'permissions',
      'bare-credential',
      'A credential on its own grants nothing: send it in a presentation signed by its subject for your challenge.',
    );
  } else checkPermissions(evaluation.checks, [], request.requiredPermissions);
  return result(
    evaluation.checks,
    'credential',
    evaluation.issuer,
    evaluation.subjects[0] ?? null,
    evaluation.types,
    [],
  );
}

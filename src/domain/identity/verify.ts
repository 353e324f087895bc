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
//
// The layers: ./verify-checks.ts (the checks' names, failure codes, the result set, the verifier's
// context), ./verify-credential-checks.ts (each check of one credential),
// ./verify-credentials.ts (a credential by its format: Data Integrity, JOSE, envelope), and this
// file: presentations (holder binding, permissions granted) and the entry point, `verify`.
import {
  isEnvelopedCredential,
  jsonLdProblems,
  presentationStructureProblems,
  VC_V1_CONTEXT,
  VC_V2_CONTEXT,
} from './data-model.ts';
import { type DidDocument, isAuthorized } from './did-document.ts';
import type { JsonLdOutcome } from './jsonld-work.ts';
import { decodeJose, verifyJoseSignature } from './vc-jose.ts';
import {
  asArray,
  CheckSet,
  type CredentialEvaluation,
  didOf,
  type FailureReason,
  idOf,
  isObject,
  type Json,
  type VerifierContext,
  type VerifyRequest,
  type VerifyResult,
  withoutJwtClaims,
} from './verify-checks.ts';
import {
  ENVELOPES,
  evaluateEmbedded,
  evaluateEnvelopedCredential,
  evaluateJwtCredential,
  evaluateLinkedDataCredential,
  failedEvaluation,
  openEnvelope,
} from './verify-credentials.ts';

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

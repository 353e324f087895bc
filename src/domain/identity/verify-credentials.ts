// One credential evaluated by its securing format (./verify.ts): JSON-LD with Data Integrity
// proofs, VC-JOSE `vc+jwt` or a VC Data Model 1.1 JWT-VC, or an enveloped credential (a `data:` URL
// holding a compact JWS); each runs the credential's checks (./verify-credential-checks.ts).
import {
  credentialStructureProblems,
  isEnvelopedCredential,
  VC_V1_CONTEXT,
  VC_V2_CONTEXT,
} from './data-model.ts';
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
  withoutJwtClaims,
} from './verify-checks.ts';
import {
  checkFormat,
  checkIssuerKey,
  checkStatus,
  checkStillOwned,
  checkValidity,
  summarize,
  typeProblems,
} from './verify-credential-checks.ts';

/** A JSON-LD credential with embedded Data Integrity proof(s). */
export async function evaluateLinkedDataCredential(
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
export async function evaluateJwtCredential(
  jwt: string,
  context: VerifierContext,
): Promise<CredentialEvaluation> {
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
export const ENVELOPES = {
  credential: { type: 'EnvelopedVerifiableCredential', media: ['vc+jwt', 'vc-ld+jwt', 'jwt'] },
  presentation: { type: 'EnvelopedVerifiablePresentation', media: ['vp+jwt', 'vp-ld+jwt', 'jwt'] },
} as const;

type Opened = { jwt: string } | { code: FailureReason; text: string };

/** The compact JWS inside an enveloped credential or presentation, or why it cannot be opened. */
export function openEnvelope(envelope: Json, kind: keyof typeof ENVELOPES): Opened {
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

export const failedEvaluation = (code: FailureReason, text: string): CredentialEvaluation => {
  const checks = new CheckSet();
  checks.fail('format', code, text);
  return { checks, issuer: null, subjects: [], types: [], permissions: [] };
};

export async function evaluateEnvelopedCredential(
  envelope: Json,
  context: VerifierContext,
): Promise<CredentialEvaluation> {
  const opened = openEnvelope(envelope, 'credential');
  return 'jwt' in opened
    ? evaluateJwtCredential(opened.jwt, context)
    : failedEvaluation(opened.code, opened.text);
}

export async function evaluateEmbedded(
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

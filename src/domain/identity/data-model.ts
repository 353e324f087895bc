// W3C Verifiable Credentials Data Model 2.0 conformance of a credential or presentation: the
// structural rules ("MUST" statements of the Recommendation) checked by hand, then JSON-LD
// expansion in safe mode with the offline loader, which catches what only JSON-LD can see (a
// protected term redefined, a type left unmapped, a malformed value object, an unknown context).
// The answer is every problem found, in words, so a developer can fix them all at once.
import type { DocumentLoader } from 'jsonld-signatures';
import { UnknownContextError } from './document-loader.ts';

export const VC_V2_CONTEXT = 'https://www.w3.org/ns/credentials/v2';
/**
 * Maps every term the VC 2.0 context leaves undefined to an issuer-dependent IRI (W3C VC Data
 * Model 2.0, §5.2). This service's credential types and claims (`wallet`, `assetId`, `role`,
 * `permissions`) are such terms; without it, JSON-LD processing drops them and signing fails.
 */
export const UNDEFINED_TERMS_CONTEXT = 'https://www.w3.org/ns/credentials/undefined-terms/v2';

type Json = Record<string, unknown>;

export interface DataModelOptions {
  /**
   * `issue`: the issuer will set `issuer` (an issuer object may still carry `name`/`description`);
   * `verify`: the document must name its issuer.
   */
  mode: 'issue' | 'verify';
  /** The base context that must come first: VC 2.0, or VC 1.1 for legacy JWT-VCs (`vc` claim). */
  baseContext?: string;
}

export const VC_V1_CONTEXT = 'https://www.w3.org/2018/credentials/v1';

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** A URL in the sense of the Data Model: absolute, any scheme (https:, did:, urn:, data:, ...). */
export function isUrl(value: unknown): value is string {
  return typeof value === 'string' && URL.canParse(value) && !/\s/.test(value);
}

/** XML Schema dateTimeStamp: a date-time with a time zone, as the Data Model requires. */
const DATE_TIME_STAMP =
  /^-?\d{4,}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]((0\d|1[0-3]):[0-5]\d|14:00))$/;

export function isDateTimeStamp(value: unknown): value is string {
  return typeof value === 'string' && DATE_TIME_STAMP.test(value) && !Number.isNaN(Date.parse(value));
}

function checkContext(document: Json, problems: string[], base = VC_V2_CONTEXT): void {
  const context = document['@context'];
  if (context === undefined) {
    problems.push(`@context is missing; its first item must be ${base}`);
    return;
  }
  const items = asArray(context);
  if (items[0] !== base) problems.push(`@context must start with ${base}`);
  items.forEach((item, index) => {
    if (!(isObject(item) || isUrl(item)))
      problems.push(`@context[${index}] must be a URL or a context object`);
  });
}

function checkType(document: Json, required: string, problems: string[]): void {
  const { type } = document;
  if (type === undefined) {
    problems.push(`type is missing; it must include ${required}`);
    return;
  }
  const types = asArray(type);
  if (!types.every((item) => typeof item === 'string' && item.length > 0))
    problems.push('type must be a string or an array of strings');
  else if (!types.includes(required)) problems.push(`type must include ${required}`);
}

function checkOptionalId(value: Json, path: string, problems: string[]): void {
  if (!('id' in value)) return;
  if (!isUrl(value.id)) problems.push(`${path}id must be a single URL`);
}

/** `name` / `description`: a string, a language value object, or an array of them. */
function checkLanguageValues(value: Json, path: string, problems: string[]): void {
  for (const key of ['name', 'description']) {
    if (!(key in value)) continue;
    for (const entry of asArray(value[key])) {
      if (typeof entry === 'string') continue;
      const valid =
        isObject(entry) &&
        typeof entry['@value'] === 'string' &&
        Object.keys(entry).every((member) => ['@value', '@language', '@direction'].includes(member));
      if (!valid)
        problems.push(
          `${path}${key} must be a string or a value object with only @value, @language and @direction`,
        );
    }
  }
}

/** Members that are objects (or arrays of them) each of which must have a `type` (and maybe an `id`). */
function checkTypedMembers(document: Json, problems: string[]): void {
  const rules: [string, { idRequired: boolean }][] = [
    ['credentialStatus', { idRequired: false }],
    ['credentialSchema', { idRequired: true }],
    ['refreshService', { idRequired: false }],
    ['termsOfUse', { idRequired: false }],
    ['evidence', { idRequired: false }],
    ['proof', { idRequired: false }],
  ];
  for (const [member, { idRequired }] of rules) {
    if (!(member in document)) continue;
    asArray(document[member]).forEach((entry, index) => {
      const path = Array.isArray(document[member]) ? `${member}[${index}].` : `${member}.`;
      if (!isObject(entry)) {
        problems.push(`${path.slice(0, -1)} must be an object`);
        return;
      }
      const types = entry.type === undefined ? [] : asArray(entry.type);
      if (types.length === 0) problems.push(`${path}type is required`);
      else if (!types.every((type) => typeof type === 'string' && type.length > 0))
        problems.push(`${path}type must be a string or strings`);
      if (idRequired && !('id' in entry)) problems.push(`${path}id is required`);
      checkOptionalId(entry, path, problems);
    });
  }
}

function checkIssuer(document: Json, options: DataModelOptions, problems: string[]): void {
  if (!('issuer' in document)) {
    if (options.mode === 'verify') problems.push('issuer is missing');
    return;
  }
  const { issuer } = document;
  if (isObject(issuer)) {
    if ('id' in issuer || options.mode === 'verify') {
      if (!isUrl(issuer.id)) problems.push('issuer.id must be a URL');
    }
    checkLanguageValues(issuer, 'issuer.', problems);
  } else if (!isUrl(issuer)) {
    problems.push('issuer must be a URL or an object with an id URL');
  }
}

function checkValidityPeriod(document: Json, problems: string[]): void {
  for (const key of ['validFrom', 'validUntil']) {
    if (key in document && !isDateTimeStamp(document[key])) {
      problems.push(`${key} must be an XML Schema dateTimeStamp (e.g. 2026-01-01T00:00:00Z)`);
    }
  }
  if (isDateTimeStamp(document.validFrom) && isDateTimeStamp(document.validUntil)) {
    if (Date.parse(document.validUntil) < Date.parse(document.validFrom))
      problems.push('validUntil is before validFrom');
  }
}

function checkSubjects(document: Json, problems: string[]): void {
  if (!('credentialSubject' in document)) {
    problems.push('credentialSubject is missing');
    return;
  }
  asArray(document.credentialSubject).forEach((subject, index) => {
    const path = Array.isArray(document.credentialSubject)
      ? `credentialSubject[${index}].`
      : 'credentialSubject.';
    if (!isObject(subject)) problems.push(`${path.slice(0, -1)} must be an object`);
    else if (Object.keys(subject).length === 0)
      problems.push(`${path.slice(0, -1)} must make at least one claim`);
    else checkOptionalId(subject, path, problems);
  });
}

/** The structural rules for a credential, without JSON-LD processing. */
export function credentialStructureProblems(document: unknown, options: DataModelOptions): string[] {
  if (!isObject(document)) return ['a credential must be a JSON object'];
  const problems: string[] = [];
  checkContext(document, problems, options.baseContext);
  checkType(document, 'VerifiableCredential', problems);
  checkOptionalId(document, '', problems);
  checkIssuer(document, options, problems);
  checkLanguageValues(document, '', problems);
  checkSubjects(document, problems);
  checkValidityPeriod(document, problems);
  checkTypedMembers(document, problems);
  return problems;
}

/** An `EnvelopedVerifiableCredential`: a credential secured by an enveloping proof, carried in a data: URL. */
export function isEnvelopedCredential(value: unknown): value is Json & { id: string } {
  return isObject(value) && asArray(value.type).includes('EnvelopedVerifiableCredential');
}

/** The structural rules for a presentation and each credential it embeds. */
/** `base`: the first context (VC Data Model 1.1 for a JWT-VP with a v1 `vp` claim). */
export function presentationStructureProblems(document: unknown, base = VC_V2_CONTEXT): string[] {
  if (!isObject(document)) return ['a presentation must be a JSON object'];
  const problems: string[] = [];
  checkContext(document, problems, base);
  checkType(document, 'VerifiablePresentation', problems);
  checkOptionalId(document, '', problems);
  if ('holder' in document) {
    const { holder } = document;
    if (isObject(holder) ? !isUrl(holder.id) : !isUrl(holder))
      problems.push('holder must be a URL or an object with an id URL');
  }
  if ('proof' in document) checkTypedMembers({ proof: document.proof }, problems);
  if ('verifiableCredential' in document) {
    asArray(document.verifiableCredential).forEach((credential, index) => {
      const path = `verifiableCredential[${index}]`;
      if (!isObject(credential)) {
        problems.push(
          `${path} must be an object (a credential, or an EnvelopedVerifiableCredential for a secured string)`,
        );
      } else if ('type' in credential && isEnvelopedCredential(credential)) {
        if (typeof credential.id !== 'string' || !credential.id.startsWith('data:'))
          problems.push(`${path}.id must be a data: URL`);
        const contextProblems: string[] = [];
        checkContext(credential, contextProblems);
        for (const problem of contextProblems) problems.push(`${path}: ${problem}`);
      } else if (
        !('type' in credential) &&
        typeof credential.id === 'string' &&
        credential.id.startsWith('data:')
      ) {
        problems.push(`${path}.type must be EnvelopedVerifiableCredential`);
      } else {
        for (const problem of credentialStructureProblems(credential, { mode: 'verify' }))
          problems.push(`${path}: ${problem}`);
      }
    });
  }
  return problems;
}

/**
 * JSON-LD expansion in safe mode: any term that would be dropped, any relative or malformed IRI,
 * any protected-term redefinition and any context the loader does not know is a problem. Proofs
 * are left out: each is processed by its own cryptosuite when the signature is checked.
 */
export async function jsonLdProblems(document: unknown, documentLoader: DocumentLoader): Promise<string[]> {
  const { proof: _proof, ...unsecured } = document as Json;
  // jsonld is loaded at its first use (./data-integrity.ts), not at every start.
  const { default: jsonld } = await import('jsonld');
  try {
    await jsonld.expand(unsecured, { documentLoader, safe: true });
    return [];
  } catch (error) {
    // Only JSON-LD's own error and event codes are reported (stable identifiers from the JSON-LD
    // API and jsonld.js's safe mode), never the library's sentences.
    const cause = error as {
      details?: {
        code?: string;
        event?: { code?: string; details?: { property?: string } };
        cause?: unknown;
      };
    };
    const event = cause.details?.event;
    if (event?.code)
      return [`JSON-LD: ${event.code}${event.details?.property ? ` (${event.details.property})` : ''}`];
    if (
      cause.details?.cause instanceof UnknownContextError ||
      cause.details?.code === 'loading remote context failed'
    )
      return ['JSON-LD: a context is not known to this service (contexts are never fetched)'];
    return [`JSON-LD: ${cause.details?.code ?? 'invalid JSON-LD'}`];
  }
}

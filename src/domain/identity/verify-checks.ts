// The vocabulary of verification (./verify.ts): the checks, in the order they are reported, the
// stable failure codes, the set of results a verification builds (CheckSet), what the verifier asks
// of the service (VerifierContext), and the small JSON helpers every layer uses.
import type { DocumentLoader } from 'jsonld-signatures';
import type { components } from '../../../generated/openapi/types.ts';
import type { DidResolver } from './did-resolver.ts';
import type { JsonLdOutcome, JsonLdTask } from './jsonld-work.ts';

export const CLOCK_SKEW_MS = 60_000;

export type Json = Record<string, unknown>;

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
export class CheckSet {
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

export const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const asArray = (value: unknown): unknown[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
export const idOf = (value: unknown): string | null =>
  typeof value === 'string' ? value : isObject(value) && typeof value.id === 'string' ? value.id : null;
export const didOf = (methodId: string) => methodId.split('#')[0];

/** JWT claims a JOSE-secured credential or presentation may carry beside the document (not JSON-LD terms). */
const JWT_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'nonce', 'cnf'];

export function withoutJwtClaims(payload: Json): Json {
  return Object.fromEntries(Object.entries(payload).filter(([name]) => !JWT_CLAIMS.includes(name)));
}

export interface CredentialEvaluation {
  checks: CheckSet;
  issuer: string | null;
  subjects: string[];
  types: string[];
  /** Permissions this credential grants if it verified and is this service's role credential. */
  permissions: string[];
}

// Domain errors: one class per kind of failure, each carrying its HTTP-neutral problem type and the
// status it maps to. The HTTP edge renders them as RFC 9457 problem+json; nothing here knows Koa.
// Problem types come from the contract's registry (contracts/problems.yaml, generated/problems.ts):
// a type the registry lacks fails typecheck, and so does one given to a class of another status. The
// title is the registry's for the type.
import { PROBLEM_TYPES, type ProblemType, type ProblemTypeWithStatus } from '../../generated/problems.ts';

export type { ProblemType };

export interface FieldError {
  /** JSON Pointer prefixed by the request part: /body/amount, /query/limit, /path/asset_id, /header/x-api-key. */
  pointer: string;
  detail: string;
}

export interface ProblemInit {
  detail?: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
  /** Extra members for the problem body (kept small and never secret). */
  extensions?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly status: number;
  readonly type: ProblemType;
  /** The registry's title for `type`. */
  readonly title: string;
  readonly detail: string | undefined;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;
  /** Whether `detail` may be shown to the client (false for unexpected failures). */
  readonly expose: boolean;

  constructor(status: number, type: ProblemType, init: ProblemInit = {}) {
    // A type outside the registry fails typecheck; one that comes through a cast anyway is its own title.
    const title: string = PROBLEM_TYPES[type]?.title ?? type;
    super(init.detail ?? title);
    this.name = new.target.name;
    this.status = status;
    this.type = type;
    this.title = title;
    this.detail = init.detail;
    this.errors = init.errors;
    this.headers = init.headers ?? {};
    this.extensions = init.extensions ?? {};
    this.expose = status < 500;
  }
}

export class ValidationError extends AppError {
  constructor(
    detail: string,
    errors?: FieldError[],
    type: ProblemTypeWithStatus<400> = '/problems/validation-failed',
  ) {
    super(400, type, { detail, errors });
  }
}

export class UnauthorizedError extends AppError {
  constructor(
    detail: string,
    challenge = 'Bearer',
    type: ProblemTypeWithStatus<401> = '/problems/unauthorized',
  ) {
    super(401, type, { detail, headers: { 'WWW-Authenticate': challenge } });
  }
}

export class ForbiddenError extends AppError {
  constructor(detail: string, type: ProblemTypeWithStatus<403> = '/problems/forbidden') {
    super(403, type, { detail });
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string, type: ProblemTypeWithStatus<404> = '/problems/not-found') {
    super(404, type, { detail });
  }
}

export class ConflictError extends AppError {
  constructor(detail: string, type: ProblemTypeWithStatus<409> = '/problems/conflict') {
    super(409, type, { detail });
  }
}

export class UnprocessableError extends AppError {
  constructor(detail: string, type: ProblemTypeWithStatus<422> = '/problems/unprocessable') {
    super(422, type, { detail });
  }
}

export class GoneError extends AppError {
  constructor(
    detail: string,
    type: ProblemTypeWithStatus<410> = '/problems/resync-required',
    extensions?: Record<string, unknown>,
  ) {
    super(410, type, { detail, extensions });
  }
}

export class TooManyRequestsError extends AppError {
  constructor(detail: string, headers: Record<string, string>) {
    super(429, '/problems/rate-limited', { detail, headers });
  }
}

/** Seconds a client is asked to wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 2;

/** The database did not answer (no connection): nothing was changed, a retry may succeed. */
export class DatabaseUnavailableError extends AppError {
  constructor() {
    super(503, '/problems/database-unavailable', {
      detail: 'The database is not answering; nothing was changed. Retry later.',
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
}

/** An EVM chain's JSON-RPC node did not answer while a request needed it: nothing was changed. */
export class ChainUnavailableError extends AppError {
  constructor(chainId: number) {
    super(503, '/problems/chain-unavailable', {
      detail: `The JSON-RPC node of chain ${chainId} did not answer; nothing was changed. Retry later.`,
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
}

/**
 * A state-changing request failed after its write may have reached the database (the connection
 * broke, or the request ran out of time): it may or may not have taken effect.
 */
export class OutcomeUnknownError extends AppError {
  constructor(why: string) {
    super(503, '/problems/outcome-unknown', {
      detail:
        `${why} The request may or may not have taken effect. Retry it with the same ` +
        'Idempotency-Key to get its outcome (without one, read the current state before retrying).',
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
}

// The one error middleware: every failure below it becomes an RFC 9457 problem+json response.
// Unexpected errors are logged in full and answered with a body that reveals nothing.
import type { Context, Next } from 'koa';
import type { components } from '../../generated/openapi/types.ts';
import { databaseFailure } from '../db/availability.ts';
import { AppError, DatabaseUnavailableError, OutcomeUnknownError } from '../domain/errors.ts';

/** Methods that change nothing: an answer that failed may be asked for again. */
export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A database that is away is a 503 with its own type, never a 500 with driver text. A connection
 * that broke under a state-changing request may have carried its COMMIT: the outcome is unknown.
 */
function databaseProblem(ctx: Context, error: unknown): AppError | null {
  const failure = databaseFailure(error);
  if (failure === null) return null;
  if (failure === 'connection-lost' && !SAFE_METHODS.has(ctx.method))
    return new OutcomeUnknownError('The database connection broke while the request was being applied.');
  return new DatabaseUnavailableError();
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The request path as a valid URI reference (the contract's `instance` format): a stray `%` or a
 * character a URI cannot hold, as a client may send, is percent-encoded.
 */
export function asUriReference(path: string): string {
  return path
    .replace(/%(?![0-9A-Fa-f]{2})/g, '%25')
    .replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g, (char) =>
      [...Buffer.from(char, 'utf8')]
        .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
        .join(''),
    );
}

export function sendProblem(ctx: Context, error: AppError): void {
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.status = error.status;
  ctx.type = PROBLEM_CONTENT_TYPE;
  const body: components['schemas']['Problem'] = {
    ...error.extensions,
    type: error.type,
    title: error.title,
    status: error.status,
    ...(error.detail !== undefined ? { detail: error.detail } : {}),
    instance: asUriReference(ctx.path),
    requestId: ctx.state.requestId,
    ...(error.errors ? { errors: error.errors } : {}),
  };
  ctx.body = body;
}

/** Errors thrown by Koa's own parts (body parser, http-errors) carry a status and an `expose` flag. */
function fromHttpError(error: { status: number; expose?: boolean; message: string }): AppError {
  const { status } = error;
  if (status === 413) {
    return new AppError(413, '/problems/payload-too-large', {
      detail: 'The request body exceeds the configured size limit.',
    });
  }
  if (status === 415) {
    return new AppError(415, '/problems/unsupported-media-type', {
      detail: error.message,
    });
  }
  if (status >= 400 && status < 500) {
    return new AppError(status, '/problems/bad-request', {
      detail: error.expose ? error.message : undefined,
    });
  }
  return new AppError(500, '/problems/internal', {
    detail: 'An unexpected error occurred.',
  });
}

/** The body parser's failures: too large (413), or not a JSON object/array (400). */
export function bodyParseError(error: { status?: number }): AppError {
  if (error.status === 413) return fromHttpError({ status: 413, message: 'too large' });
  return new AppError(400, '/problems/malformed-json', {
    detail: 'The request body is not a valid JSON object or array.',
  });
}

export function errorMiddleware() {
  return async function handleErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (caught) {
      const error = caught as { status?: unknown; statusCode?: unknown; message?: string };
      let problem: AppError;
      if (caught instanceof AppError) {
        problem = caught;
      } else if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
        problem = fromHttpError(caught as { status: number; message: string });
      } else {
        problem =
          databaseProblem(ctx, caught) ??
          new AppError(500, '/problems/internal', {
            detail: 'An unexpected error occurred.',
          });
      }
      if (!problem.expose) {
        ctx.state.log?.error({ err: caught }, 'request failed');
        // Only fixed wording for 5xx, whatever the original error said.
        problem = new AppError(problem.status, problem.type, {
          detail: problem.status === 503 ? problem.detail : 'An unexpected error occurred.',
          headers: problem.headers,
        });
      }
      sendProblem(ctx, problem);
    }
  };
}

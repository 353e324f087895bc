// Turns whatever an API call failed with into words: RFC 9457 problem+json from the API, RFC 6749
// `{ error, error_description }` from the OAuth endpoints, or a network failure.
import type { components } from '../../../generated/openapi/types.ts';

export type Problem = components['schemas']['Problem'];
type OAuthError = components['schemas']['OAuthError'];

/** An API call that did not succeed, carrying the problem to show. */
export class ApiError extends Error {
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(problem.detail ? `${problem.title}: ${problem.detail}` : problem.title);
    this.name = 'ApiError';
    this.problem = problem;
  }
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && typeof (value as Problem).title === 'string';
}

function isOAuthError(value: unknown): value is OAuthError {
  return typeof value === 'object' && value !== null && typeof (value as OAuthError).error === 'string';
}

/** Builds the problem for a failed openapi-fetch call from its `error` body and response. */
export function toProblem(error: unknown, response: Response | undefined): Problem {
  const status = response?.status ?? 0;
  if (isProblem(error)) return error;
  if (isOAuthError(error)) {
    return {
      type: `/oauth/${error.error}`,
      title: error.error.replace(/_/g, ' '),
      status,
      detail: error.error_description,
    };
  }
  if (error instanceof Error && !(error instanceof ApiError)) {
    return {
      type: 'about:blank',
      title: 'The service could not be reached',
      status: 0,
      detail: error.message,
    };
  }
  return {
    type: 'about:blank',
    title: response?.statusText || 'Request failed',
    status,
    detail: `The service answered ${status}.`,
  };
}

/**
 * Unwraps an openapi-fetch result: the data, or an ApiError with the problem. `data` is typed from
 * the contract by openapi-fetch; a success without a body (204) gives undefined.
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok)
    throw new ApiError(toProblem(result.error, result.response));
  return result.data as T;
}

/** The problem to show for anything thrown by a view. */
export function problemOf(error: unknown): Problem {
  if (error instanceof ApiError) return error.problem;
  return toProblem(error, undefined);
}

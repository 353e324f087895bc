// Errors of the service as one typed class: an RFC 9457 problem+json answer (every error but the
// OAuth endpoints'), or any other non-2xx answer, keeps its `type` (branch on it, never on `title`).
import type { components } from '../../../generated/openapi/types.ts';

export type Problem = components['schemas']['Problem'];
export type ProblemFieldError = components['schemas']['ProblemFieldError'];

export class GatsProblemError extends Error {
  /** The problem type, a relative URI such as `/problems/validation-failed`; `about:blank` for an answer that was no problem+json. */
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string | undefined;
  /** One entry per invalid field, for invalid input (the problem's `errors`). */
  readonly fields: ProblemFieldError[];
  readonly requestId: string | undefined;
  /** `Retry-After` of a 429 or 503, in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The answer's body as parsed (a problem, an OAuth error object, or text). */
  readonly body: unknown;

  constructor(status: number, body: unknown, headers?: Headers) {
    const problem = isProblem(body) ? body : undefined;
    const title = problem?.title ?? `HTTP ${status}`;
    super(problem?.detail ? `${title}: ${problem.detail}` : title);
    this.name = 'GatsProblemError';
    this.type = problem?.type ?? 'about:blank';
    this.title = title;
    this.status = status;
    this.detail = problem?.detail;
    this.fields = problem?.errors ?? [];
    this.requestId = problem?.requestId ?? headers?.get('x-request-id') ?? undefined;
    this.retryAfterMs = retryAfterMs(headers?.get('retry-after') ?? null);
    this.body = body;
  }
}

export function isProblem(body: unknown): body is Problem {
  if (!body || typeof body !== 'object') return false;
  const { type, title, status } = body as Record<string, unknown>;
  return typeof type === 'string' && typeof title === 'string' && typeof status === 'number';
}

/** `Retry-After` (delay-seconds or an HTTP date) in milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The data of an openapi-fetch result, or its error as a GatsProblemError. */
export async function unwrap<T>(
  result:
    | Promise<{ data?: T; error?: unknown; response: Response }>
    | { data?: T; error?: unknown; response: Response },
): Promise<T> {
  const { data, error, response } = await result;
  if (!response.ok) throw new GatsProblemError(response.status, error, response.headers);
  return data as T;
}

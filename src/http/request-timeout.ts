// The request time limit (REQUEST_TIMEOUT_MS), a middleware of the HTTP stack (src/app.ts).
import type Koa from 'koa';
import { AppError, OutcomeUnknownError, RETRY_AFTER_SECONDS } from '../domain/errors.ts';
import { SAFE_METHODS } from './problem.ts';

/**
 * Answers 503 when a request outlives the limit, so a stuck dependency never hangs a client. A
 * state-changing request keeps running after its answer and may still commit: its answer says the
 * outcome is unknown and how to learn it, never "try again later" (issue 14.3).
 */
export function requestTimeout(ms: number) {
  return async function limitTime(ctx: Koa.Context, next: Koa.Next): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            SAFE_METHODS.has(ctx.method)
              ? new AppError(503, '/problems/timeout', {
                  detail: 'The request took too long; try again later.',
                  headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
                })
              : new OutcomeUnknownError('The request ran out of time before its answer was ready.'),
          ),
        ms,
      );
    });
    try {
      await Promise.race([next(), expired]);
    } finally {
      clearTimeout(timer);
    }
  };
}

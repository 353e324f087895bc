// A GET to an address the service was given (a token's metadata URL): the host resolved and checked
// once by the SSRF rules (./targets.ts) and the connection pinned to the checked address, a time
// limit on the whole exchange, a size limit on the body (the connection is dropped past it), no
// redirects followed (a redirect could lead anywhere: it is an error), no cookies, no credentials.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  pinnedLookup,
  type Resolver,
  resolveTarget,
  type TargetPolicy,
  targetUrlProblem,
} from './targets.ts';

export interface GuardedGetOptions extends TargetPolicy {
  timeoutMs: number;
  maxBytes: number;
  userAgent: string;
  resolve?: Resolver;
}

export class GuardedGetError extends Error {
  override name = 'GuardedGetError';
  /** Whether trying again later may succeed (a time-out, a 5xx, a connection error). */
  readonly retryable: boolean;
  /** Whether the time limit ran out (the host did not answer in time). */
  readonly timedOut: boolean;
  constructor(message: string, retryable: boolean, timedOut = false) {
    super(message);
    this.retryable = retryable;
    this.timedOut = timedOut;
  }
}

/** Fetches `target` under the SSRF rules and limits; answers the body of a 2xx answer. */
export async function guardedGet(
  target: string,
  options: GuardedGetOptions,
): Promise<{ body: Buffer; contentType: string }> {
  const problem = targetUrlProblem(target, options);
  if (problem) throw new GuardedGetError(`${target} ${problem}`, false);
  const url = new URL(target);
  // One time limit for the name's resolution and the exchange (a resolver may hang too).
  const signal = AbortSignal.timeout(options.timeoutMs);
  let pinned: { address: string; family: number };
  try {
    pinned = await Promise.race([
      resolveTarget(url, options),
      new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error(`${url.host} did not resolve in time`)), {
          once: true,
        }),
      ),
    ]);
  } catch (error) {
    throw new GuardedGetError((error as Error).message, signal.aborted, signal.aborted);
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, {
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': options.userAgent },
      lookup: pinnedLookup(pinned),
      signal,
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.resume();
        reject(new GuardedGetError(`HTTP ${status} from ${url.host}`, status >= 500 || status === 429));
        return;
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > options.maxBytes) {
        req.destroy();
        reject(new GuardedGetError(`answer of ${declared} bytes is over ${options.maxBytes}`, false));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) {
          req.destroy();
          reject(new GuardedGetError(`answer over ${options.maxBytes} bytes`, false));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({ body: Buffer.concat(chunks), contentType: String(res.headers['content-type'] ?? '') }),
      );
      res.on('error', (error) => reject(new GuardedGetError(error.message, true)));
    });
    req.on('error', (error) => {
      const timedOut = error.name === 'AbortError' || error.name === 'TimeoutError';
      reject(
        new GuardedGetError(
          timedOut ? `no answer within ${options.timeoutMs} ms` : error.message,
          true,
          timedOut,
        ),
      );
    });
    req.end();
  });
}

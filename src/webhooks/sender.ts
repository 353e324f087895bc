// One webhook request: the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
// `webhook-signature`, signed by the `standardwebhooks` library: HMAC-SHA256 over
// `id.timestamp.body`), sent to the address resolveTarget checked, within a time limit. After a
// secret rotation the previous secret signs too: the header then holds two signatures, and a receiver
// holding either secret verifies the message.
// The HTTP client is undici's (`Pool.dispatch`, no streams, its own coarse timers: a time limit can
// run up to about a second over, measured in test/unit/webhooks/sender.test.ts): about half of
// node:http's CPU per request, which is most of a delivery's cost. Connections are kept alive, in one
// pool per origin and checked address (a name that resolves elsewhere later gets a pool of its own,
// so a pooled socket always leads to a checked address); no pipelining (a slow answer never holds up
// another subscription's request on the same connection). A request on a reused socket that the
// server closed meanwhile is sent once more on a fresh one.
import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Pool } from 'undici';
import { pinnedLookup } from '../net/targets.ts';
import { type Resolver, resolveTarget, type TargetPolicy } from './targets.ts';

/** The most of an answer's body read (and kept as the delivery's last error text). */
const MAX_RESPONSE_BYTES = 4096;
/** Connection pools kept (one per origin and address); the least recently used goes beyond. */
const MAX_POOLS = 256;
/** An idle kept-alive connection is closed after this (or the server's own keep-alive hint, if shorter). */
const KEEP_ALIVE_MS = 30_000;

/** Kept-alive connections, one pool per origin and checked address (one set per sender thread). */
export interface Pools {
  pool(url: URL, pinned: { address: string; family: number }, timeoutMs: number): Pool;
  /** Closes every pooled connection (the service stops). */
  close(): void;
}

export function createPools(): Pools {
  const pools = new Map<string, Pool>();
  return {
    pool(url, pinned, timeoutMs) {
      const key = `${url.protocol}//${url.host}|${pinned.address}|${timeoutMs}`;
      let pool = pools.get(key);
      if (pool) {
        // Most recently used last.
        pools.delete(key);
      } else {
        // Connect to the checked address only (the Host header and TLS name stay the URL's host).
        pool = new Pool(url.origin, {
          connect: { lookup: pinnedLookup(pinned), timeout: timeoutMs },
          keepAliveTimeout: KEEP_ALIVE_MS,
          keepAliveMaxTimeout: KEEP_ALIVE_MS,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          pipelining: 1,
        });
        if (pools.size >= MAX_POOLS) {
          const [oldest, evicted] = pools.entries().next().value as [string, Pool];
          pools.delete(oldest);
          void evicted.destroy().catch(() => undefined);
        }
      }
      pools.set(key, pool);
      return pool;
    },
    close() {
      for (const pool of pools.values()) void pool.destroy().catch(() => undefined);
      pools.clear();
    },
  };
}

/** Signs with one `Webhook` per secret (each decodes its secret once). */
export function signers(secrets: string[]): Webhook[] {
  return secrets.map((secret) => new Webhook(secret));
}

export interface Outcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

export function signatureHeader(
  secrets: string[] | Webhook[],
  messageId: string,
  at: Date,
  body: string,
): string {
  return secrets
    .map((secret) => (typeof secret === 'string' ? new Webhook(secret) : secret).sign(messageId, at, body))
    .join(' ');
}

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
/** The connection broke before any answer: on a kept-alive socket, the server closed it meanwhile. */
const CLOSED = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** Where a series of requests goes: the URL's host resolved and checked once, its pool of connections. */
export interface Prepared {
  url: URL;
  path: string;
  pool: Pool;
}

type SendOptions = TargetPolicy & { timeoutMs: number; userAgent: string; pools: Pools; resolve?: Resolver };

/**
 * Resolves and checks the target (at delivery time: every series of requests does it again), and
 * picks its pool; or the refusal as a failed outcome.
 */
export async function prepareTarget(target: string, options: SendOptions): Promise<Prepared | Outcome> {
  const url = new URL(target);
  let pinned: { address: string; family: number };
  try {
    pinned = await resolveTarget(url, options);
  } catch (error) {
    return { ok: false, statusCode: null, error: (error as Error).message };
  }
  return { url, path: url.pathname + url.search, pool: options.pools.pool(url, pinned, options.timeoutMs) };
}

export async function sendWebhook(
  target: string,
  message: { id: string; body: string; secrets: string[] | Webhook[] },
  options: SendOptions,
): Promise<Outcome> {
  const prepared = await prepareTarget(target, options);
  return 'pool' in prepared ? sendPrepared(prepared, message, options) : prepared;
}

/** Signs and sends one message to a prepared target. */
export function sendPrepared(
  { url, path, pool }: Prepared,
  message: { id: string; body: string; secrets: string[] | Webhook[] },
  options: { timeoutMs: number; userAgent: string },
): Promise<Outcome> {
  const at = new Date();
  const headers: IncomingHttpHeaders = {
    'content-type': 'application/json',
    'user-agent': options.userAgent,
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatureHeader(message.secrets, message.id, at, message.body),
  };
  const attempt = (retried: boolean) =>
    new Promise<Outcome>((resolve) => {
      let status = 0;
      let answered = false;
      /** The answer's body was longer than what is kept: the rest is not read. */
      let cut = false;
      let abort: (error?: Error) => void = () => {};
      const complete = () => {
        const ok = status >= 200 && status < 300;
        const text = ok ? '' : Buffer.concat(chunks).toString('utf8').slice(0, 200);
        resolve({ ok, statusCode: status, error: ok ? null : `HTTP ${status}${text ? `: ${text}` : ''}` });
      };
      const chunks: Buffer[] = [];
      let size = 0;
      pool.dispatch(
        { origin: url.origin, path, method: 'POST', headers, body: message.body },
        {
          onConnect(abortRequest) {
            abort = abortRequest;
          },
          onHeaders(statusCode) {
            status = statusCode;
            answered = statusCode >= 200;
            return true;
          },
          onData(chunk) {
            chunks.push(chunk);
            size += chunk.length;
            if (size >= MAX_RESPONSE_BYTES) {
              cut = true;
              abort();
              return false;
            }
            return true;
          },
          onComplete: complete,
          onError(error: Error & { code?: string }) {
            if (cut) {
              complete();
              return;
            }
            if (answered) {
              resolve({ ok: false, statusCode: status, error: error.message });
              return;
            }
            if (!retried && error.code !== undefined && CLOSED.has(error.code)) {
              resolve(attempt(true));
              return;
            }
            resolve({
              ok: false,
              statusCode: null,
              error:
                error.code !== undefined && TIMEOUTS.has(error.code)
                  ? `no answer within ${options.timeoutMs} ms`
                  : error.message,
            });
          },
        },
      );
    });
  return attempt(false);
}

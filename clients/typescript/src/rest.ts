// The REST client: openapi-fetch over the contract's generated `paths`, so every operation of the
// contract is a typed call (`client.POST('/api/v1/transfer', { body })`) and no request or response
// type is written by hand. Around it: credentials (bearer token, API key), an Idempotency-Key on
// every mutating call, and retries that are safe (see retryingFetch).
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from '../../../generated/openapi/types.ts';
import { backoffDelay, sleep } from './backoff.ts';
import { retryAfterMs } from './problem.ts';

/**
 * Every operation of the contract (openapi-typescript's `paths`): its reference is the OpenAPI
 * document, not this package's.
 * @hidden
 */
export type { paths };

/** A credential, or a function giving the current one (a refreshed token, say). */
export type CredentialSource = string | (() => string | undefined | Promise<string | undefined>);

export interface RetryOptions {
  /** Tries in all, the first included (default 4). */
  attempts: number;
  /** Back-off of the first retry of a network error or a 503 without `Retry-After` (default 250 ms; doubles, jittered). */
  baseDelayMs: number;
  /** The longest back-off (default 5 s). */
  maxDelayMs: number;
  /** A `Retry-After` longer than this is not waited for: the 429 or 503 is answered to the caller (default 30 s). */
  maxRetryAfterMs: number;
}

export interface GatsClientOptions {
  /** The service's origin, such as `https://gats.example.com`. */
  baseUrl: string;
  /** The OAuth access token, sent as `Authorization: Bearer …`. */
  token?: CredentialSource;
  /** The API key, sent as `X-API-Key`. */
  apiKey?: CredentialSource;
  /** The fetch to use (default the global one): a proxy, a test double, a fetch with a custom agent. */
  fetch?: (request: Request) => Promise<Response>;
  /** Retry policy; `false` sends every request once. */
  retry?: Partial<RetryOptions> | false;
  /** Makes the Idempotency-Key of a mutating call that was given none (default `crypto.randomUUID()`). */
  idempotencyKey?: () => string;
}

export type GatsClient = Client<paths> & {
  readonly baseUrl: string;
  /** The credential headers (`authorization`, `x-api-key`) as they are now. */
  authHeaders(): Promise<Record<string, string>>;
};

const DEFAULT_RETRY: RetryOptions = {
  attempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 5000,
  maxRetryAfterMs: 30_000,
};

/** Methods a repeat of which changes nothing more than the first (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';
/** "POST /api/v1/transfer" for each operation whose contract declares an `Idempotency-Key` header. */
type KeyedOperation = {
  [P in keyof paths]: {
    [M in Method]: paths[P][M] extends { parameters: { header?: infer H } }
      ? [NonNullable<H>] extends [never]
        ? never
        : 'Idempotency-Key' extends keyof NonNullable<H>
          ? `${Uppercase<M>} ${P}`
          : never
      : never;
  }[Method];
}[keyof paths];

/**
 * The operations that honour `Idempotency-Key` (a repeat with the key answers the first result): a
 * POST or PATCH among them is retried after a network error or a 503. Written out because the
 * browser bundle should not carry the contract; the two checks below make tsc fail when the
 * contract's list and this one differ.
 */
const KEYED_OPERATIONS = [
  'POST /api/v1/collections/{collection_id}/mint/batch',
  'POST /api/v1/recipes/{recipe_id}/craft',
  'POST /api/v1/nft/create',
  'POST /api/v1/currencies',
  'POST /api/v1/currencies/{asset_id}/mint',
  'POST /api/v1/assets/{asset_id}/burn',
  'PATCH /api/v1/assets/{asset_id}/metadata',
  'POST /api/v1/price/{id}',
  'POST /api/v1/transfer',
  'POST /api/v1/transfer/batch',
  'POST /api/v1/trades',
  'POST /api/v1/trades/{trade_id}/accept',
  'POST /api/v1/listings',
  'POST /api/v1/listings/{listing_id}/buy',
  'POST /api/v1/offers',
  'POST /api/v1/offers/{offer_id}/accept',
  'POST /api/v1/store-offers/{offer_id}/purchase',
  'POST /api/v1/loot-boxes/{box_id}/open',
  'POST /api/v1/auctions',
  'POST /api/v1/auctions/{auction_id}/bids',
  'POST /api/v1/claim-codes/redeem',
  'POST /api/v1/assets/{asset_id}/lend',
] as const satisfies readonly KeyedOperation[];
type Missing = Exclude<KeyedOperation, (typeof KEYED_OPERATIONS)[number]>;
const everyKeyedOperationListed: [Missing] extends [never] ? true : Missing = true;
void everyKeyedOperationListed;
const keyedOperations: ReadonlySet<string> = new Set(KEYED_OPERATIONS);

/** Creates the typed REST client. */
export function createGatsClient(options: GatsClientOptions): GatsClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  /** Whether a failed attempt of this request may be sent again (set by the middleware below). */
  const repeatable = new WeakMap<Request, boolean>();
  const client = createClient<paths>({
    baseUrl,
    // The contract's array query parameters are `style: form, explode: false` (`types=a,b`);
    // openapi-fetch repeats the name by default (`types=a&types=b`).
    querySerializer: { array: { style: 'form', explode: false } },
    fetch: retryingFetch(
      options.fetch ?? ((request) => globalThis.fetch(request)),
      options.retry,
      repeatable,
    ),
  });
  const authHeaders = async (): Promise<Record<string, string>> => {
    const headers: Record<string, string> = {};
    const token = await resolve(options.token);
    const apiKey = await resolve(options.apiKey);
    if (token) headers.authorization = `Bearer ${token}`;
    if (apiKey) headers['x-api-key'] = apiKey;
    return headers;
  };
  const makeKey = options.idempotencyKey ?? (() => crypto.randomUUID());
  const middleware: Middleware = {
    async onRequest({ request, schemaPath }) {
      for (const [name, value] of Object.entries(await authHeaders())) {
        if (!request.headers.has(name)) request.headers.set(name, value);
      }
      const method = request.method.toUpperCase();
      const mutating = !['GET', 'HEAD', 'OPTIONS'].includes(method);
      // Every mutating call carries a key, the caller's or a fresh one; its retries send the same
      // Request, hence the same key, so the service applies the write at most once.
      if (mutating && !request.headers.has('idempotency-key'))
        request.headers.set('idempotency-key', makeKey());
      repeatable.set(
        request,
        IDEMPOTENT_METHODS.has(method) || keyedOperations.has(`${method} ${schemaPath}`),
      );
      return request;
    },
  };
  client.use(middleware);
  return Object.assign(client, { baseUrl, authHeaders });
}

async function resolve(source: CredentialSource | undefined): Promise<string | undefined> {
  return typeof source === 'function' ? source() : source;
}

/**
 * Sends a request, again when that is safe: a 429 (the request was refused, not applied) after its
 * `Retry-After`; a network error or a 503 only for a request that is idempotent or keyed (a keyed
 * write repeated answers the first result), after `Retry-After` or a jittered back-off. A wait longer
 * than `maxRetryAfterMs` is not made: the answer goes to the caller.
 */
function retryingFetch(
  send: (request: Request) => Promise<Response>,
  retry: Partial<RetryOptions> | false | undefined,
  repeatable: WeakMap<Request, boolean>,
): (input: Request) => Promise<Response> {
  const policy = { ...DEFAULT_RETRY, ...(retry === false ? { attempts: 1 } : retry) };
  return async (request) => {
    const safe = repeatable.get(request) ?? IDEMPOTENT_METHODS.has(request.method.toUpperCase());
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= policy.attempts;
      let response: Response;
      try {
        // A clone per attempt: the original's body stays unread for the next one.
        response = await send(last ? request : request.clone());
      } catch (error) {
        if (last || !safe || request.signal.aborted) throw error;
        await sleep(backoffDelay(attempt, policy.baseDelayMs, policy.maxDelayMs), request.signal);
        continue;
      }
      if (last || !(response.status === 429 || (response.status === 503 && safe))) return response;
      const wait =
        retryAfterMs(response.headers.get('retry-after')) ??
        backoffDelay(attempt, policy.baseDelayMs, policy.maxDelayMs);
      if (wait > policy.maxRetryAfterMs) return response;
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}

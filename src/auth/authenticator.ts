// The edge's guard: bearer token (RFC 6750) and, where the contract asks, an API key; then the
// API key's rate limit, the scopes and the roles the operation declares.
import type { Context } from 'koa';
import type { OperationGuard } from '../contract/operations.ts';
import { ForbiddenError, UnauthorizedError } from '../domain/errors.ts';
import type { ApiKeyService } from './api-keys.ts';
import type { AuthContext, Authenticator, Role } from './caller.ts';
import type { ClientStatus } from './client-status.ts';
import type { LimitOwners } from './limit-owners.ts';
import { type NamedRateLimit, type RateLimiter, rateLimitedError, rateLimitHeaders } from './rate-limit.ts';
import { scopesAllowedFor } from './scopes.ts';
import { type AccessTokenClaims, InvalidTokenError, type TokenVerifier } from './token-verifier.ts';

const REALM = 'realm="gats"';
/** RFC 6750 §2.1 b64token. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * What follows `Bearer` and its spaces (the scheme in any case), or '' when the header does not start
 * so: where BEARER matches, the same as its group.
 */
function bearerToken(header: string): string {
  if (header.length < 8 || header.charCodeAt(6) !== 0x20 || header.slice(0, 6).toLowerCase() !== 'bearer')
    return '';
  let start = 7;
  while (header.charCodeAt(start) === 0x20) start++;
  return header.slice(start);
}

function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, '')}"`;
}

function invalidToken(detail: string): UnauthorizedError {
  return new UnauthorizedError(
    detail,
    `Bearer ${REALM}, error="invalid_token", error_description=${quoted(detail)}`,
    '/problems/invalid-token',
  );
}

function invalidApiKey(detail: string): UnauthorizedError {
  return new UnauthorizedError(detail, `ApiKey ${REALM}, header="X-API-Key"`, '/problems/invalid-api-key');
}

/** Heaviest a request counts (the contract's batches have at most 100 legs or items). */
const MAX_WEIGHT = 100;

/**
 * Rate-limit units a request costs: one, or (30.12) one per leg or item of a batch, read from the
 * parsed body before validation (a body the contract refuses later still counts what it carried).
 */
function requestWeight(ctx: Context, guard: OperationGuard): number {
  if (!guard.rateWeight) return 1;
  const body = (ctx.request as { body?: unknown }).body;
  const items = body && typeof body === 'object' ? (body as Record<string, unknown>)[guard.rateWeight] : null;
  return Array.isArray(items) ? Math.min(Math.max(items.length, 1), MAX_WEIGHT) : 1;
}

export function createAuthenticator(options: {
  verifier: TokenVerifier;
  apiKeys: ApiKeyService;
  clients: ClientStatus;
  owners: LimitOwners;
  limiter: RateLimiter;
  rateLimit: {
    requestsPerWindow: number;
    windowSeconds: number;
    userRequestsPerWindow: number;
    accountRequestsPerWindow: number;
  };
}): Authenticator {
  const { verifier, apiKeys, clients, owners, limiter, rateLimit } = options;
  // The verifier hands back the same claims object for a token it remembers: the scopes a role
  // leaves of it are worked out once per token and role.
  const effective = new WeakMap<AccessTokenClaims, { role: Role; scopes: ReadonlySet<string> }>();
  function effectiveScopes(claims: AccessTokenClaims, role: Role): ReadonlySet<string> {
    const known = effective.get(claims);
    if (known?.role === role) return known.scopes;
    const allowed = scopesAllowedFor(role);
    const scopes = new Set([...claims.scope].filter((scope) => allowed.has(scope)));
    effective.set(claims, { role, scopes });
    return scopes;
  }

  return {
    async authenticate(ctx: Context, guard: OperationGuard): Promise<AuthContext> {
      const header = ctx.get('authorization');
      if (!header) {
        // RFC 6750 §3.1: no error code when the request carried no credentials at all.
        throw new UnauthorizedError('This operation requires a bearer token.', `Bearer ${REALM}`);
      }
      // A token verified before matched BEARER then: the header is checked in full only otherwise.
      let claims = verifier.remembered(bearerToken(header));
      if (!claims) {
        const match = BEARER.exec(header);
        if (!match) throw invalidToken('The Authorization header is not a bearer token.');
        try {
          claims = await verifier.verify(match[1]);
        } catch (error) {
          if (error instanceof InvalidTokenError) throw invalidToken(error.message);
          throw error;
        }
      }

      // A deleted application's (or service account's) tokens stop working with it.
      const clientActive = clients.isActive(claims.clientId);
      if (clientActive === false || (clientActive !== true && !(await clientActive)))
        throw invalidToken('The application this token was issued to has been deleted.');

      let role = claims.role;
      let apiKeyId: string | null = null;
      let account: string | undefined;
      // 13.5: every authenticated operation counts against its user as well as its key (a user's
      // keys no longer multiply its rate), account management against a smaller budget too.
      const counted: NamedRateLimit[] = [];
      /** Policies to count the request against: name, counter key, limit, what it limits. */
      const charges: [name: string, key: string, limit: number, what: string][] = [];
      if (guard.apiKey) {
        const presented = ctx.get('x-api-key');
        if (!presented) throw invalidApiKey('This operation requires an API key in X-API-Key.');
        const key = await apiKeys.resolve(presented);
        if (!key) throw invalidApiKey('The API key is unknown or revoked.');
        if (key.userId !== claims.userId)
          throw invalidApiKey('The API key belongs to another user than the bearer token.');
        charges.push(['default', `key:${key.id}`, rateLimit.requestsPerWindow, 'requests of this API key']);
        apiKeyId = key.id;
        // The key lookup (cached briefly) knows the user's current role: a demotion applies at once.
        role = key.role;
        account = key.ownerId;
      }
      // 30.6: a service account counts against its owner's budgets (not a whole user's budget more).
      if (account === undefined) {
        const owner = owners.of(claims.userId);
        account = typeof owner === 'string' ? owner : await owner;
      }
      charges.push(['user', `user:${account}`, rateLimit.userRequestsPerWindow, 'requests of this user']);
      if (guard.accountRateLimit) {
        charges.push([
          'account',
          `account:${account}`,
          rateLimit.accountRequestsPerWindow,
          'account management requests of this user',
        ]);
      }
      const weight = requestWeight(ctx, guard);
      for (const [name, key, limit, what] of charges) {
        // At once from counters in memory; a promise only from Redis.
        const counting = limiter.hit(key, limit, rateLimit.windowSeconds, weight);
        const state = counting instanceof Promise ? await counting : counting;
        counted.push([name, state]);
        if (!state.allowed) throw rateLimitedError(state, what, counted);
      }
      ctx.set(rateLimitHeaders(counted));

      // Never more than the role allows, even if the token was issued under a more generous role.
      const scopes = effectiveScopes(claims, role);
      const missing = guard.scopes.filter((scope) => !scopes.has(scope));
      if (missing.length > 0) {
        const error = new ForbiddenError(
          `The token lacks the scope ${missing.join(' ')}.`,
          '/problems/insufficient-scope',
        );
        error.headers['WWW-Authenticate'] =
          `Bearer ${REALM}, error="insufficient_scope", scope=${quoted(guard.scopes.join(' '))}`;
        throw error;
      }
      // Every operation declares its roles in the contract (x-roles): the edge enforces them all.
      if (!guard.roles.includes(role)) {
        throw new ForbiddenError(
          `The ${role} role may not do this (allowed: ${guard.roles.join(', ')}).`,
          '/problems/role-not-allowed',
        );
      }

      return {
        userId: claims.userId,
        role,
        scopes,
        clientId: claims.clientId,
        tokenId: claims.jti,
        expiresAt: claims.exp,
        apiKeyId,
        account,
      };
    },
  };
}

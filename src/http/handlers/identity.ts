// Identity operations: DIDs, verifiable credentials (issue, verify, revoke), status lists and the
// service's own DID document.
import { type RateLimitResult, rateLimitedError, rateLimitHeaders } from '../../auth/rate-limit.ts';
import { AppError } from '../../domain/errors.ts';
import type { IdentityService } from '../../domain/identity/service.ts';
import { caller, type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { cursorOf, limitOf } from './ledger-request.ts';

const DID_JSON = 'application/did+json';
const VC_JWT = 'application/vc+jwt';
/** Verifiers may cache a status list this long: the delay before a revocation is seen everywhere. */
const STATUS_LIST_MAX_AGE_SECONDS = 60;

export interface VerifyLimits {
  bodyLimitBytes: number;
  maxJsonNodes: number;
  /**
   * Charges verification's extra cost to the caller's API key budget (it already paid one unit
   * to get in); answers the budget's state.
   */
  charge?(apiKeyId: string): Promise<RateLimitResult>;
}

/** Counts JSON values up to `limit` (stops early: the point is not to walk a huge document). */
function jsonNodesOver(value: unknown, limit: number): boolean {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const item = stack.pop();
    if (++count > limit) return true;
    if (Array.isArray(item)) stack.push(...item);
    else if (typeof item === 'object' && item !== null) stack.push(...Object.values(item));
  }
  return false;
}

function tooLarge(detail: string): AppError {
  return new AppError(413, '/problems/payload-too-large', { detail });
}

export function identityHandlers(
  identity: IdentityService,
  limits: VerifyLimits = { bodyLimitBytes: 32 * 1024, maxJsonNodes: 2000 },
): HandlerMap {
  return typedHandlers<
    | 'createIdentity'
    | 'createKeyChallenge'
    | 'issueCredential'
    | 'verifyCredential'
    | 'revokeCredential'
    | 'listCredentials'
    | 'resolveDid'
    | 'getStatusListCredential'
    | 'getServiceDidDocument'
  >({
    async createIdentity(request, ctx) {
      const { body } = request;
      const proof =
        body.challenge !== undefined && body.signature !== undefined
          ? { challenge: body.challenge, signature: body.signature }
          : undefined;
      const created = await identity.createIdentity(caller(request).userId, body.publicKeyMultibase, proof);
      ctx.set('Location', `/identity/dids/${encodeURIComponent(created.did)}`);
      respond(ctx, 'createIdentity', 201, created);
    },

    async createKeyChallenge(request, ctx) {
      const challenge = identity.createKeyChallenge(caller(request).userId, request.body.publicKeyMultibase);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'createKeyChallenge', 201, challenge);
    },

    async issueCredential(request, ctx) {
      const { userId, role } = caller(request);
      const issued = await identity.issueCredential({ userId, role }, request.body);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'issueCredential', 201, issued);
    },

    async verifyCredential(request, ctx) {
      // 13.4: the cost of verifying grows with the document (canonicalization is superlinear), so
      // verification has its own, smaller limits than the service's body limit.
      const length = ctx.request.length ?? Buffer.byteLength(JSON.stringify(request.body));
      if (length > limits.bodyLimitBytes)
        throw tooLarge(
          `A verify request may be at most ${limits.bodyLimitBytes} bytes (VERIFY_BODY_LIMIT_BYTES).`,
        );
      if (jsonNodesOver(request.body, limits.maxJsonNodes))
        throw tooLarge(
          `A verified credential or presentation may have at most ${limits.maxJsonNodes} JSON values (VERIFY_MAX_JSON_NODES).`,
        );
      const { apiKeyId } = caller(request);
      if (limits.charge && apiKeyId) {
        const state = await limits.charge(apiKeyId);
        if (!state.allowed)
          throw rateLimitedError(state, 'request units (a verification costs VERIFY_RATE_COST)');
        ctx.set(rateLimitHeaders(state));
      }
      respond(ctx, 'verifyCredential', 200, await identity.verify(request.body));
    },

    async revokeCredential(request, ctx) {
      const { userId, role } = caller(request);
      respond(
        ctx,
        'revokeCredential',
        200,
        await identity.revokeCredential({ userId, role }, request.params.credential_id),
      );
    },

    async listCredentials(request, ctx) {
      const { userId, role } = caller(request);
      ctx.set('Cache-Control', 'no-store');
      const page = await identity.listCredentials(
        { userId, role },
        { user: request.query.user, limit: limitOf(request), cursor: cursorOf(request) },
      );
      respond(ctx, 'listCredentials', 200, page);
    },

    async resolveDid(request, ctx) {
      // The DID travels as one percent-encoded path segment (a did:web port's "%3A" as "%253A");
      // the router has already decoded it once.
      ctx.type = DID_JSON;
      respond(ctx, 'resolveDid', 200, await identity.resolveDid(request.params.did));
    },

    async getStatusListCredential(request, ctx) {
      const form = ctx.accepts(VC_JWT, 'application/json') === 'application/json' ? 'json' : 'jwt';
      const { body } = await identity.statusListCredential(request.params.list_id, form);
      ctx.set('Cache-Control', `public, max-age=${STATUS_LIST_MAX_AGE_SECONDS}`);
      ctx.vary('Accept');
      ctx.type = form === 'jwt' ? VC_JWT : 'application/json';
      ctx.body = body;
    },

    async getServiceDidDocument(_request, ctx) {
      ctx.type = DID_JSON;
      respond(ctx, 'getServiceDidDocument', 200, await identity.serviceDidDocument());
    },
  });
}

// Identity operations: DIDs, verifiable credentials (issue, verify, revoke), status lists and the
// service's own DID document.
import type { components } from '../../../generated/openapi/types.ts';
import type { IssueRequest } from '../../domain/identity/credentials.ts';
import type { IdentityService } from '../../domain/identity/service.ts';
import type { VerifyRequest } from '../../domain/identity/verify.ts';
import { caller, type HandlerMap } from '../handler.ts';

type Schemas = components['schemas'];

const DID_JSON = 'application/did+json';
const VC_JWT = 'application/vc+jwt';
/** Verifiers may cache a status list this long: the delay before a revocation is seen everywhere. */
const STATUS_LIST_MAX_AGE_SECONDS = 60;

export function identityHandlers(identity: IdentityService): HandlerMap {
  return {
    async createIdentity(request, ctx) {
      const body = request.body as Schemas['CreateIdentityRequest'];
      const created = await identity.createIdentity(caller(request).userId, body.publicKeyMultibase);
      ctx.status = 201;
      ctx.set('Location', `/identity/dids/${encodeURIComponent(created.did)}`);
      ctx.body = created;
    },

    async issueCredential(request, ctx) {
      const { userId, role } = caller(request);
      const issued = await identity.issueCredential(
        { userId, role },
        request.body as Schemas['IssueCredentialRequest'] as IssueRequest,
      );
      ctx.status = 201;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = issued;
    },

    async verifyCredential(request, ctx) {
      ctx.body = await identity.verify(request.body as VerifyRequest);
    },

    async revokeCredential(request, ctx) {
      const { userId, role } = caller(request);
      ctx.body = await identity.revokeCredential({ userId, role }, request.params.credential_id);
    },

    async resolveDid(request, ctx) {
      // The DID travels as one percent-encoded path segment (a did:web port's "%3A" as "%253A");
      // the router has already decoded it once.
      ctx.type = DID_JSON;
      ctx.body = await identity.resolveDid(request.params.did);
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
      ctx.body = await identity.serviceDidDocument();
    },
  };
}

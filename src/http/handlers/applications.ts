// Applications (OAuth clients) and their API keys. Bearer token only: a new user manages these
// before having any API key.

import type { ApiKeyService } from '../../auth/api-keys.ts';
import {
  applicationView,
  assertMayManageAccount,
  createApplication,
  deleteApplication,
  listApplications,
} from '../../auth/applications.ts';
import type { ClientStatus } from '../../auth/client-status.ts';
import type { Quotas } from '../../auth/quotas.ts';
import type { Orm } from '../../db/orm.ts';
import { inTransaction } from '../../db/transactions.ts';
import { caller, type HandlerMap, type OperationHandler, respond, typedHandlers } from '../handler.ts';

export interface ApplicationHandlerDeps {
  orm: Orm;
  apiKeys: ApiKeyService;
  clients: ClientStatus;
  quotas: Pick<Quotas, 'applicationsPerUser'>;
}

export function applicationHandlers(deps: ApplicationHandlerDeps): HandlerMap {
  const { orm, apiKeys } = deps;
  const handlers = typedHandlers<
    | 'createApplication'
    | 'listApplications'
    | 'deleteApplication'
    | 'createApiKey'
    | 'listApiKeys'
    | 'revokeApiKey'
  >({
    async createApplication(request, ctx) {
      const { application, clientSecret } = await inTransaction(orm, (em) =>
        createApplication(em, caller(request).userId, request.body, deps.quotas),
      );
      ctx.set('Location', `/api/v1/applications/${application.clientId}`);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'createApplication', 201, { ...applicationView(application), clientSecret });
    },

    async listApplications(request, ctx) {
      const applications = await listApplications(orm.em.fork(), caller(request).userId);
      respond(ctx, 'listApplications', 200, { data: applications.map(applicationView) });
    },

    async deleteApplication(request, ctx) {
      const { client_id: clientId } = request.params;
      // Seeded clients (first-party, demo) have no owner: "not found", like anyone else's application.
      await inTransaction(orm, async (em) => {
        await deleteApplication(em, caller(request).userId, clientId);
        await apiKeys.revokeForApplication(em, clientId);
      });
      // Its tokens stop working now, not when they expire.
      deps.clients.forget(clientId);
      ctx.status = 204;
    },

    async createApiKey(request, ctx) {
      const auth = caller(request);
      const created = await apiKeys.create(auth.userId, auth.clientId, request.body.name);
      ctx.set('Location', `/api/v1/api-keys/${created.id}`);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'createApiKey', 201, {
        id: created.id,
        key: created.key,
        name: created.name,
        prefix: created.prefix,
        clientId: created.clientId,
        createdAt: created.createdAt,
      });
    },

    async listApiKeys(request, ctx) {
      respond(ctx, 'listApiKeys', 200, { data: await apiKeys.list(caller(request).userId) });
    },

    async revokeApiKey(request, ctx) {
      await apiKeys.revoke(caller(request).userId, request.params.key_id);
      ctx.status = 204;
    },
  });
  // Every one of these operations is account management: refused to third-party applications' tokens.
  const guard =
    (handler: OperationHandler): OperationHandler =>
    async (request, ctx) => {
      const auth = caller(request);
      await assertMayManageAccount(orm.em.fork(), auth.userId, auth.clientId);
      await handler(request, ctx);
    };
  return Object.fromEntries(Object.entries(handlers).map(([id, handler]) => [id, guard(handler)]));
}

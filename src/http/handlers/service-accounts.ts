// Service accounts (machine clients using the client credentials grant) and their client secrets.
// Account management like applications: bearer token only, refused to third-party applications'
// tokens and to service accounts themselves.

import type { UserRegisteredHook } from '../../auth/accounts.ts';
import type { ApiKeyService } from '../../auth/api-keys.ts';
import { assertMayManageAccount } from '../../auth/applications.ts';
import type { ClientStatus } from '../../auth/client-status.ts';
import {
  addClientSecret,
  assertNotServiceAccount,
  createServiceAccount,
  deleteServiceAccount,
  getServiceAccount,
  listServiceAccounts,
  revokeClientSecret,
} from '../../auth/service-accounts.ts';
import type { Orm } from '../../db/orm.ts';
import { inTransaction } from '../../db/transactions.ts';
import { caller, type HandlerMap, type OperationHandler, respond, typedHandlers } from '../handler.ts';

export interface ServiceAccountHandlerDeps {
  orm: Orm;
  apiKeys: ApiKeyService;
  clients: ClientStatus;
  limit: number;
  onUserRegistered?: UserRegisteredHook;
}

export function serviceAccountHandlers(deps: ServiceAccountHandlerDeps): HandlerMap {
  const { orm } = deps;
  const handlers = typedHandlers<
    | 'createServiceAccount'
    | 'listServiceAccounts'
    | 'getServiceAccount'
    | 'deleteServiceAccount'
    | 'createClientSecret'
    | 'revokeClientSecret'
  >({
    async createServiceAccount(request, ctx) {
      const auth = caller(request);
      const { account, clientSecret } = await inTransaction(orm, (em) =>
        createServiceAccount(em, auth, request.body, {
          limit: deps.limit,
          onUserRegistered: deps.onUserRegistered,
        }),
      );
      ctx.set('Location', `/api/v1/service-accounts/${account.id}`);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'createServiceAccount', 201, { ...account, clientSecret });
    },

    async listServiceAccounts(request, ctx) {
      respond(ctx, 'listServiceAccounts', 200, {
        data: await listServiceAccounts(orm.em.fork(), caller(request).userId),
      });
    },

    async getServiceAccount(request, ctx) {
      respond(
        ctx,
        'getServiceAccount',
        200,
        await getServiceAccount(orm.em.fork(), caller(request).userId, request.params.service_account_id),
      );
    },

    async deleteServiceAccount(request, ctx) {
      const id = request.params.service_account_id;
      const keyIds = await inTransaction(orm, (em) => deleteServiceAccount(em, caller(request).userId, id));
      deps.clients.forget(id);
      deps.apiKeys.forgetKeys(keyIds);
      ctx.status = 204;
    },

    async createClientSecret(request, ctx) {
      const id = request.params.service_account_id;
      const created = await inTransaction(orm, (em) => addClientSecret(em, caller(request).userId, id));
      ctx.set('Location', `/api/v1/service-accounts/${id}/secrets/${created.id}`);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'createClientSecret', 201, created);
    },

    async revokeClientSecret(request, ctx) {
      const { service_account_id: id, secret_id: secretId } = request.params;
      await inTransaction(orm, (em) => revokeClientSecret(em, caller(request).userId, id, secretId));
      ctx.status = 204;
    },
  });
  const guard =
    (handler: OperationHandler): OperationHandler =>
    async (request, ctx) => {
      const auth = caller(request);
      assertNotServiceAccount(auth.userId);
      await assertMayManageAccount(orm.em.fork(), auth.userId, auth.clientId);
      await handler(request, ctx);
    };
  return Object.fromEntries(Object.entries(handlers).map(([id, handler]) => [id, guard(handler)]));
}

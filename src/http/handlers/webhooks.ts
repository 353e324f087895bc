// Webhook subscriptions of the caller (any role; bearer token and API key), and their repair
// operations: delivery history, redelivery of one, replay from an event id.
import type { WebhookService } from '../../webhooks/subscriptions.ts';
import { caller, type HandlerMap, respond, typedHandlers } from '../handler.ts';

export function webhookHandlers(service: WebhookService): HandlerMap {
  return typedHandlers<
    | 'createWebhook'
    | 'listWebhooks'
    | 'getWebhook'
    | 'deleteWebhook'
    | 'enableWebhook'
    | 'disableWebhook'
    | 'rotateWebhookSecret'
    | 'listWebhookDeliveries'
    | 'redeliverWebhookDelivery'
    | 'replayWebhook'
  >({
    async createWebhook(request, ctx) {
      const { userId, account, role } = caller(request);
      const created = await service.create(userId, request.body, account, role);
      ctx.set('Location', `/api/v1/webhooks/${created.id}`);
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'createWebhook', 201, created);
    },
    async listWebhooks(request, ctx) {
      respond(ctx, 'listWebhooks', 200, { data: await service.list(caller(request).userId) });
    },
    async getWebhook(request, ctx) {
      respond(ctx, 'getWebhook', 200, await service.get(caller(request).userId, request.params.webhook_id));
    },
    async deleteWebhook(request, ctx) {
      await service.remove(caller(request).userId, request.params.webhook_id);
      ctx.status = 204;
    },
    async enableWebhook(request, ctx) {
      const enabled = await service.setEnabled(caller(request).userId, request.params.webhook_id, true);
      respond(ctx, 'enableWebhook', 200, enabled);
    },
    async disableWebhook(request, ctx) {
      const disabled = await service.setEnabled(caller(request).userId, request.params.webhook_id, false);
      respond(ctx, 'disableWebhook', 200, disabled);
    },
    async rotateWebhookSecret(request, ctx) {
      ctx.set('Cache-Control', 'no-store');
      const rotated = await service.rotateSecret(caller(request).userId, request.params.webhook_id);
      respond(ctx, 'rotateWebhookSecret', 200, rotated);
    },
    async listWebhookDeliveries(request, ctx) {
      const { query } = request;
      const page = await service.deliveries(caller(request).userId, request.params.webhook_id, {
        limit: query.limit ?? 50,
        cursor: query.cursor,
        status: query.status,
      });
      respond(ctx, 'listWebhookDeliveries', 200, page);
    },
    async redeliverWebhookDelivery(request, ctx) {
      const { webhook_id: id, delivery_id: deliveryId } = request.params;
      const delivery = await service.redeliver(caller(request).userId, id, deliveryId);
      respond(ctx, 'redeliverWebhookDelivery', 202, delivery);
    },
    async replayWebhook(request, ctx) {
      const { after } = request.query;
      const replay = await service.replay(caller(request).userId, request.params.webhook_id, Number(after));
      respond(ctx, 'replayWebhook', 202, replay);
    },
  });
}

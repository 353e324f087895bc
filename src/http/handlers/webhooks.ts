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
      const created = await service.create(caller(request).userId, request.body);
      ctx.set('Location', `/api/v1/webhooks/${created.id}`);
      ctx.set('Cache-Control', 'no-store');
      // Not `respond` for webhook and delivery views: WebhookView.status and DeliveryView.eventType
      // and status (src/webhooks/subscriptions.ts) are typed wider than the contract's enums.
      ctx.status = 201;
      ctx.body = created;
    },
    async listWebhooks(request, ctx) {
      ctx.body = { data: await service.list(caller(request).userId) };
    },
    async getWebhook(request, ctx) {
      ctx.body = await service.get(caller(request).userId, request.params.webhook_id);
    },
    async deleteWebhook(request, ctx) {
      await service.remove(caller(request).userId, request.params.webhook_id);
      ctx.status = 204;
    },
    async enableWebhook(request, ctx) {
      ctx.body = await service.setEnabled(caller(request).userId, request.params.webhook_id, true);
    },
    async disableWebhook(request, ctx) {
      ctx.body = await service.setEnabled(caller(request).userId, request.params.webhook_id, false);
    },
    async rotateWebhookSecret(request, ctx) {
      ctx.set('Cache-Control', 'no-store');
      const rotated = await service.rotateSecret(caller(request).userId, request.params.webhook_id);
      respond(ctx, 'rotateWebhookSecret', 200, rotated);
    },
    async listWebhookDeliveries(request, ctx) {
      const { query } = request;
      ctx.body = await service.deliveries(caller(request).userId, request.params.webhook_id, {
        limit: query.limit ?? 50,
        cursor: query.cursor,
        status: query.status,
      });
    },
    async redeliverWebhookDelivery(request, ctx) {
      const { webhook_id: id, delivery_id: deliveryId } = request.params;
      ctx.status = 202;
      ctx.body = await service.redeliver(caller(request).userId, id, deliveryId);
    },
    async replayWebhook(request, ctx) {
      const { after } = request.query;
      const replay = await service.replay(caller(request).userId, request.params.webhook_id, Number(after));
      respond(ctx, 'replayWebhook', 202, replay);
    },
  });
}

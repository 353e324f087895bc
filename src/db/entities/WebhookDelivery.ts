import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { WebhookSubscription } from './WebhookSubscription.ts';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event to one subscription: its state, attempts and last outcome (at least once, in order). */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  uniques: [{ properties: ['subscription', 'eventId'] }],
  indexes: [{ properties: ['subscription', 'status', 'eventId'] }],
  properties: {
    id: p.string().primary(),
    subscription: () => p.manyToOne(WebhookSubscription).ref(),
    eventId: p.bigint('number'),
    eventType: p.string(),
    status: p.string(),
    attempts: p.integer(),
    /** When the current series of attempts began (retries stop WEBHOOK_RETRY_HOURS after it). */
    firstAttemptAt: p.datetime().nullable(),
    nextAttemptAt: p.datetime(),
    lastAttemptAt: p.datetime().nullable(),
    lastStatusCode: p.integer().nullable(),
    lastError: p.string().nullable(),
    deliveredAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;

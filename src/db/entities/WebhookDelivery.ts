import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { EventType } from './OutboxEvent.ts';
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
    // Text columns typed as the values written (the contract's enums).
    eventType: p.string().$type<EventType>(),
    status: p.string().$type<DeliveryStatus>(),
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

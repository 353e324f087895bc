import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';
import { User } from './User.ts';

/** What a webhook may subscribe to: the outbox's event types and `auditRecorded` (webhooks only). */
export type WebhookEventType = components['schemas']['WebhookEventType'];

export const WEBHOOK_STATUSES = ['active', 'failing', 'disabled'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/**
 * A webhook subscription (issue 18): where to POST which events, signed per the Standard Webhooks
 * specification. `cursor` is the last outbox id already turned into deliveries; `lockedBy` /
 * `lockedUntil` is the lease an instance holds while it delivers, so one instance at a time sends a
 * subscription's events, in id order.
 */
export const WebhookSubscription = defineEntity({
  name: 'WebhookSubscription',
  properties: {
    id: p.string().primary(),
    owner: () => p.manyToOne(User).ref().index(),
    url: p.text(),
    eventTypes: p.json<WebhookEventType[]>(),
    walletFilter: p.string().nullable(),
    assetFilter: p.string().nullable(),
    collectionFilter: p.string().nullable(),
    /** The signing secrets, newest first, sealed with the secret box (HMAC needs them in clear). */
    secretsSealed: p.text().hidden(),
    /** Until when the previous secret still signs too (after a rotation). */
    previousSecretExpiresAt: p.datetime().nullable(),
    enabled: p.boolean(),
    // A text column typed as the values written (the contract's enum).
    status: p.string().$type<WebhookStatus>(),
    failingSince: p.datetime().nullable(),
    cursor: p.bigint('number'),
    lockedBy: p.string().nullable(),
    lockedUntil: p.datetime().nullable().index(),
    /**
     * `auditRecorded` (issue 37, src/webhooks/audit-feed.ts): the last audit entry `seq` the
     * subscription is done with; null when it does not subscribe to audit entries. Its own lease
     * (`auditLockedBy`, `auditLockedUntil`), apart from the outbox dispatcher's.
     */
    auditCursor: p.bigint('number').nullable(),
    auditLockedBy: p.string().nullable(),
    auditLockedUntil: p.datetime().nullable(),
    createdAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
});
export type WebhookSubscription = InferEntity<typeof WebhookSubscription>;

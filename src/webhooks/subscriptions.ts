// Webhook subscriptions and their deliveries: create (the signing secret shown once, kept sealed by
// the secret box since signing needs it), list, delete, enable/disable, rotate the secret, and the
// repair operations (list deliveries, redeliver one, replay from an event id).

import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import type { components } from '../../generated/openapi/types.ts';
import { accountMembers, lockUser, QuotaExceededError } from '../auth/quotas.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { EVENT_TYPES, type EventType } from '../db/entities/OutboxEvent.ts';
import { User, type UserRole } from '../db/entities/User.ts';
import { WebhookDelivery } from '../db/entities/WebhookDelivery.ts';
import { WebhookSubscription } from '../db/entities/WebhookSubscription.ts';
import type { Orm } from '../db/orm.ts';
import { inTransaction } from '../db/transactions.ts';
import { auditDraft, auditTipSeq, recordAudit } from '../domain/audit.ts';
import { auditOwnersVisibleTo, ownedBy } from '../domain/authorization.ts';
import { NotFoundError, ValidationError } from '../domain/errors.ts';
import { ulid } from '../domain/ids.ts';
import { formatAddress, parseAddress } from '../domain/ledger/addresses.ts';
import type { EventFilter } from '../events/filter.ts';
import { type TargetPolicy, webhookUrlProblem } from './targets.ts';

/** How long the previous secret keeps signing after a rotation (receivers move to the new one meanwhile). */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
const DELIVERY_PAGE_MAX = 100;

type Schemas = components['schemas'];

// The views are the contract's schemas (generated/openapi/types.ts): a field the contract renames or
// retypes fails typecheck here.
export type WebhookView = Schemas['Webhook'];
export type CreatedWebhookView = Schemas['CreatedWebhook'];
export type DeliveryView = Schemas['WebhookDelivery'];
export type DeliveryPage = Schemas['WebhookDeliveryPage'];
export type CreateWebhookInput = Schemas['CreateWebhookRequest'];

function view(sub: WebhookSubscription): WebhookView {
  const filter: WebhookView['filter'] = {};
  if (sub.walletFilter) filter.walletId = formatAddress(sub.walletFilter);
  if (sub.assetFilter) filter.assetId = sub.assetFilter;
  if (sub.collectionFilter) filter.collection = sub.collectionFilter;
  return {
    id: sub.id,
    url: sub.url,
    eventTypes: sub.eventTypes,
    filter,
    enabled: sub.enabled,
    status: sub.status,
    failingSince: sub.failingSince?.toISOString() ?? null,
    createdAt: sub.createdAt.toISOString(),
  };
}

function deliveryView(delivery: WebhookDelivery): DeliveryView {
  return {
    id: delivery.id,
    eventId: String(delivery.eventId),
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    lastStatusCode: delivery.lastStatusCode ?? null,
    lastError: delivery.lastError ?? null,
    lastAttemptAt: delivery.lastAttemptAt?.toISOString() ?? null,
    nextAttemptAt: delivery.status === 'pending' ? delivery.nextAttemptAt.toISOString() : null,
    deliveredAt: delivery.deliveredAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
  };
}

/** The outbox's event types of a subscription (`auditRecorded` is not one: src/webhooks/audit-feed.ts). */
function outboxTypes(types: readonly WebhookSubscription['eventTypes'][number][]): EventType[] {
  return types.filter((type): type is EventType => type !== AUDIT_RECORDED);
}

/** The webhook-only event type of new audit entries (issue 37), delivered by src/webhooks/audit-feed.ts. */
export const AUDIT_RECORDED = 'auditRecorded';

/**
 * The subscription's filter in the events module's terms (the one definition of matching): the
 * outbox's types only, so no reader of the outbox ever matches `auditRecorded`.
 */
export function subscriptionFilter(sub: WebhookSubscription): EventFilter {
  return {
    types: new Set(outboxTypes(sub.eventTypes)),
    wallet: sub.walletFilter ?? undefined,
    assetId: sub.assetFilter ?? undefined,
    collection: sub.collectionFilter ?? undefined,
  };
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const sealContext = (id: string) => `webhook:${id}`;

export interface WebhookService {
  /**
   * `account`: the user whose webhook quota it counts against (a service account's owner, 30.6);
   * `role`: the caller's current role (`auditRecorded` needs one that may read the audit trail).
   */
  create(
    userId: string,
    input: CreateWebhookInput,
    account?: string,
    role?: UserRole,
  ): Promise<CreatedWebhookView>;
  list(userId: string): Promise<WebhookView[]>;
  get(userId: string, id: string): Promise<WebhookView>;
  remove(userId: string, id: string): Promise<void>;
  setEnabled(userId: string, id: string, enabled: boolean): Promise<WebhookView>;
  rotateSecret(userId: string, id: string): Promise<Schemas['RotatedWebhookSecret']>;
  deliveries(
    userId: string,
    id: string,
    page: { limit: number; cursor?: string; status?: DeliveryView['status'] },
  ): Promise<DeliveryPage>;
  redeliver(userId: string, id: string, deliveryId: string): Promise<DeliveryView>;
  replay(userId: string, id: string, after: number): Promise<Schemas['WebhookReplay']>;
  /** The secrets that sign now, newest first (the previous one while its overlap lasts). */
  signingSecrets(sub: WebhookSubscription): string[];
}

export function createWebhookService(deps: {
  orm: Orm;
  secretBox: SecretBox;
  policy: TargetPolicy;
  maxPerUser: number;
  /** The newest final event id: a new subscription starts after it. */
  lastEventId: () => number;
  /** Tells this instance's dispatcher there is work (a replay, a redelivery, an enabled subscription). */
  wake: () => void;
  /**
   * Tells this instance's dispatcher a subscription changed (its secret, enabled): read it again. With
   * the subscription as committed (a rotation), the dispatcher signs with its secrets from now on,
   * before the answer: an event committed after the answer is never signed with the previous secret
   * alone here. Another instance holding the subscription reads it again within its poll (250 ms).
   */
  changed: (committed?: WebhookSubscription) => void;
  /**
   * Resolves once this instance's dispatcher has written the deliveries it made to the subscription
   * `id` (it writes them in batches, moments after the request): what a receiver has seen is listed
   * and can be repaired. It waits for that subscription's request in flight, no other's (30.7).
   */
  settle: (id: string) => Promise<void>;
}): WebhookService {
  const { orm, secretBox } = deps;

  async function owned(em: EntityManager, userId: string, id: string): Promise<WebhookSubscription> {
    const sub = await em.findOne(WebhookSubscription, { id, ...ownedBy(userId), deletedAt: null });
    if (!sub) throw new NotFoundError(`No webhook with id ${id}.`);
    return sub;
  }

  function secretsOf(sub: WebhookSubscription): string[] {
    return JSON.parse(secretBox.open(sub.secretsSealed, sealContext(sub.id))) as string[];
  }

  return {
    async create(userId, input, account = userId, role = 'player') {
      const audit = input.eventTypes?.includes(AUDIT_RECORDED) === true;
      // Audit entries only for whom may read the audit trail (the audit log's own decision: 403).
      if (audit) auditOwnersVisibleTo({ userId, role }, []);
      const errors: { pointer: string; detail: string }[] = [];
      const urlProblem = webhookUrlProblem(input.url, deps.policy);
      if (urlProblem) errors.push({ pointer: '/body/url', detail: urlProblem });
      const wallet = input.filter?.walletId;
      let walletFilter: string | null = null;
      try {
        walletFilter = wallet === undefined ? null : parseAddress(wallet, '/body/filter/walletId');
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        errors.push(...(error.errors ?? []));
      }
      if (errors.length > 0) throw new ValidationError('The webhook is not acceptable.', errors);
      const secret = generateSigningSecret();
      const sub = await inTransaction(orm, async (em) => {
        // The owner's row serializes its and its service accounts' creations.
        await lockUser(em, account);
        const owners = await accountMembers(em, account);
        if (
          (await em.count(WebhookSubscription, { owner: { $in: owners }, deletedAt: null })) >=
          deps.maxPerUser
        )
          throw new QuotaExceededError('webhooks', deps.maxPerUser, 'delete one you no longer use first.');
        const id = `wh_${ulid()}`;
        const created = em.create(WebhookSubscription, {
          id,
          owner: em.getReference(User, userId),
          url: input.url,
          // Absent: every outbox type, never `auditRecorded` (named explicitly only).
          eventTypes: [...new Set(input.eventTypes ?? EVENT_TYPES)],
          walletFilter,
          assetFilter: input.filter?.assetId ?? null,
          collectionFilter: input.filter?.collection ?? null,
          secretsSealed: secretBox.seal(JSON.stringify([secret]), sealContext(id)),
          previousSecretExpiresAt: null,
          enabled: true,
          status: 'active',
          failingSince: null,
          // Events committed from now on: the history before is available with replay.
          cursor: deps.lastEventId(),
          lockedBy: null,
          lockedUntil: null,
          // Set below, past this subscription's own creation entry.
          auditCursor: null,
          auditLockedBy: null,
          auditLockedUntil: null,
          createdAt: new Date(),
          deletedAt: null,
        });
        await em.flush();
        await recordAudit(
          em,
          auditDraft('webhook.created', { type: 'webhook', id, ownerId: userId }, { after: view(created) }),
        );
        // Audit entries appended from now on (this transaction holds the tip's lock: the tip is its own entry).
        if (audit) {
          created.auditCursor = await auditTipSeq(em);
          await em.flush();
        }
        return created;
      });
      deps.changed();
      return { ...view(sub), secret };
    },

    async list(userId) {
      const subs = await orm.em
        .fork()
        .find(
          WebhookSubscription,
          { owner: userId, deletedAt: null },
          { orderBy: { createdAt: 'asc', id: 'asc' } },
        );
      return subs.map(view);
    },

    async get(userId, id) {
      return view(await owned(orm.em.fork(), userId, id));
    },

    async remove(userId, id) {
      await inTransaction(orm, async (em) => {
        const sub = await owned(em, userId, id);
        const before = view(sub);
        sub.deletedAt = new Date();
        sub.enabled = false;
        await em.flush();
        await recordAudit(
          em,
          auditDraft('webhook.deleted', { type: 'webhook', id, ownerId: userId }, { before }),
        );
      });
      deps.changed();
    },

    async setEnabled(userId, id, enabled) {
      const sub = await inTransaction(orm, async (em) => {
        const sub = await owned(em, userId, id);
        const before = view(sub);
        sub.enabled = enabled;
        // Enabling again starts afresh: a subscription disabled for failing gets a new chance.
        sub.status = enabled ? 'active' : 'disabled';
        if (enabled) sub.failingSince = null;
        await em.flush();
        await recordAudit(
          em,
          auditDraft(
            'webhook.updated',
            { type: 'webhook', id, ownerId: userId },
            { before, after: view(sub) },
          ),
        );
        return sub;
      });
      deps.changed();
      return view(sub);
    },

    async rotateSecret(userId, id) {
      const secret = generateSigningSecret();
      const expiresAt = new Date(Date.now() + SECRET_OVERLAP_MS);
      const rotated = await inTransaction(orm, async (em) => {
        const sub = await owned(em, userId, id);
        sub.secretsSealed = secretBox.seal(JSON.stringify([secret, secretsOf(sub)[0]]), sealContext(sub.id));
        sub.previousSecretExpiresAt = expiresAt;
        await em.flush();
        await recordAudit(
          em,
          auditDraft(
            'webhook.secretRotated',
            { type: 'webhook', id, ownerId: userId },
            {
              after: { previousSecretExpiresAt: expiresAt },
            },
          ),
        );
        return sub;
      });
      deps.changed(rotated);
      return { secret, previousSecretExpiresAt: expiresAt.toISOString() };
    },

    async deliveries(userId, id, page) {
      const em = orm.em.fork();
      await owned(em, userId, id);
      await deps.settle(id);
      const limit = Math.min(page.limit, DELIVERY_PAGE_MAX);
      const where: Record<string, unknown> = { subscription: id };
      if (page.cursor !== undefined) where.eventId = { $lt: Number(page.cursor) };
      if (page.status !== undefined) where.status = page.status;
      const rows = await em.find(WebhookDelivery, where, { orderBy: { eventId: 'desc' }, limit: limit + 1 });
      const data = rows.slice(0, limit).map(deliveryView);
      return { data, next_cursor: rows.length > limit ? data[data.length - 1].eventId : null };
    },

    async redeliver(userId, id, deliveryId) {
      const em = orm.em.fork();
      await owned(em, userId, id);
      await deps.settle(id);
      const delivery = await em.findOne(WebhookDelivery, { id: deliveryId, subscription: id });
      if (!delivery) throw new NotFoundError(`No delivery with id ${deliveryId}.`);
      Object.assign(delivery, { status: 'pending', nextAttemptAt: new Date(), firstAttemptAt: null });
      await em.flush();
      deps.wake();
      return deliveryView(delivery);
    },

    async replay(userId, id, after) {
      await owned(orm.em.fork(), userId, id);
      await deps.settle(id);
      const redelivering = await inTransaction(orm, async (em) => {
        const sub = await owned(em, userId, id);
        // Deliveries already made after `after` go again; events not yet turned into deliveries
        // (the cursor moves back) are added by the dispatcher.
        const reset = await em.nativeUpdate(
          WebhookDelivery,
          { subscription: id, eventId: { $gt: after } },
          { status: 'pending', nextAttemptAt: new Date(), firstAttemptAt: null },
        );
        if (sub.cursor > after) sub.cursor = after;
        await em.flush();
        return reset;
      });
      deps.wake();
      return { redelivering };
    },

    signingSecrets(sub) {
      const secrets = secretsOf(sub);
      const overlap = sub.previousSecretExpiresAt && sub.previousSecretExpiresAt.getTime() > Date.now();
      return overlap ? secrets : secrets.slice(0, 1);
    },
  };
}

// What both adapters of the delivery store (./port.ts) do the same way, through the ORM: the reads,
// the leases, and the writes of the slow path (a row at a time). The adapters differ in how rows are
// locked when leases are taken, and in the fast path's batched writes (./sqlite.ts, ./postgres.ts).
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { WebhookDelivery } from '../../db/entities/WebhookDelivery.ts';
import { WebhookSubscription } from '../../db/entities/WebhookSubscription.ts';
import type { Orm } from '../../db/orm.ts';
import type { WebhookBacklog } from '../../observability/metrics.ts';
import { deliveryId } from '../delivery-id.ts';
import type { DeliveryStore } from './port.ts';

const leaseFree = (now: Date) => ({ $or: [{ lockedUntil: null }, { lockedUntil: { $lt: now } }] });

export function sharedDeliveryStore(
  orm: Orm,
  options: { lockClaimedRows: boolean },
): Omit<DeliveryStore, 'recordSuccesses'> {
  const em = () => orm.em.fork() as unknown as EntityManager;
  const ids = <T extends { subscription: { id: string } }>(rows: T[]) =>
    new Set(rows.map((row) => row.subscription.id));

  return {
    async anyEnabled() {
      return (await em().count(WebhookSubscription, { enabled: true, deletedAt: null })) > 0;
    },

    async behind({ lastEventId, now, limit, exceptOwners }) {
      const rows = await em().find(
        WebhookSubscription,
        {
          enabled: true,
          deletedAt: null,
          cursor: { $lt: lastEventId },
          ...leaseFree(now),
          ...(exceptOwners.length > 0 && { owner: { $nin: [...exceptOwners] } }),
        },
        { fields: ['id'], limit },
      );
      return rows.map((sub) => sub.id);
    },

    async ownersBehind(owners, lastEventId, now) {
      if (owners.length === 0) return [];
      const rows = await em().find(
        WebhookSubscription,
        {
          owner: { $in: [...owners] },
          enabled: true,
          deletedAt: null,
          cursor: { $lt: lastEventId },
          ...leaseFree(now),
        },
        { fields: ['owner'], limit: 100 },
      );
      return rows.map((sub) => sub.owner.id);
    },

    async due(now, limit) {
      return ids(
        await em().find(
          WebhookDelivery,
          { status: 'pending', nextAttemptAt: { $lte: now } },
          { fields: ['subscription'], limit },
        ),
      );
    },

    async retryLater(subscriptions, now) {
      if (subscriptions.length === 0) return new Set();
      return ids(
        await em().find(
          WebhookDelivery,
          { subscription: { $in: [...subscriptions] }, status: 'pending', nextAttemptAt: { $gt: now } },
          { fields: ['subscription'] },
        ),
      );
    },

    async withPending(subscriptions) {
      if (subscriptions.length === 0) return new Set();
      return ids(
        await em().find(
          WebhookDelivery,
          { subscription: { $in: [...subscriptions] }, status: 'pending' },
          { fields: ['subscription'] },
        ),
      );
    },

    async claim(candidates, { instance, until, limit, admit }) {
      const taken = new Map<string, string>();
      if (limit <= 0 || candidates.length === 0) return taken;
      await em().transactional(async (tx) => {
        const free = await tx.find(
          WebhookSubscription,
          { id: { $in: [...candidates] }, enabled: true, deletedAt: null, ...leaseFree(new Date()) },
          {
            fields: ['id', 'owner'],
            limit,
            ...(options.lockClaimedRows ? { lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE } : {}),
          },
        );
        for (const sub of free) {
          const account = await admit(sub.owner.id);
          if (account !== null) taken.set(sub.id, account);
        }
        if (taken.size === 0) return;
        await tx.nativeUpdate(
          WebhookSubscription,
          { id: { $in: [...taken.keys()] } },
          { lockedBy: instance, lockedUntil: until },
        );
      });
      return taken;
    },

    leased(instance, subscriptions) {
      return em().find(WebhookSubscription, {
        ...(subscriptions && { id: { $in: [...subscriptions] } }),
        lockedBy: instance,
      });
    },

    async renew(instance, until) {
      await em().nativeUpdate(WebhookSubscription, { lockedBy: instance }, { lockedUntil: until });
    },

    async release(id, instance) {
      await em().nativeUpdate(
        WebhookSubscription,
        { id, lockedBy: instance },
        { lockedBy: null, lockedUntil: null },
      );
    },

    recordFirstFailure(instance, move, row) {
      return em().transactional(async (tx) => {
        const moved = await tx.nativeUpdate(
          WebhookSubscription,
          { id: move.id, lockedBy: instance, cursor: move.from },
          { cursor: move.to },
        );
        if (moved !== 1) return false;
        await tx.insert(WebhookDelivery, row);
        return true;
      });
    },

    async materialize(subscription, instance, { from, to }, events, now) {
      await em().transactional(async (tx) => {
        // Only the lease holder moves the cursor, and only from where it read it (a replay may move it back).
        const moved = await tx.nativeUpdate(
          WebhookSubscription,
          { id: subscription, lockedBy: instance, cursor: from },
          { cursor: to },
        );
        if (moved !== 1 || events.length === 0) return;
        const existing = new Set(
          (
            await tx.find(
              WebhookDelivery,
              { subscription, eventId: { $in: events.map((event) => event.id) } },
              { fields: ['eventId'] },
            )
          ).map((row) => Number(row.eventId)),
        );
        const rows = events
          .filter((event) => !existing.has(event.id))
          .map((event) => ({
            id: deliveryId(subscription, event.id, event.occurredAt.getTime()),
            subscription,
            eventId: event.id,
            eventType: event.type,
            status: 'pending' as const,
            attempts: 0,
            firstAttemptAt: null,
            nextAttemptAt: now,
            lastAttemptAt: null,
            lastStatusCode: null,
            lastError: null,
            deliveredAt: null,
            createdAt: now,
          }));
        if (rows.length > 0) await tx.insertMany(WebhookDelivery, rows);
      });
    },

    nextPending(subscription) {
      return em().findOne(
        WebhookDelivery,
        { subscription, status: 'pending' },
        { orderBy: { eventId: 'asc' } },
      );
    },

    subscription(id) {
      return em().findOne(WebhookSubscription, { id });
    },

    delivery(id) {
      return em().findOne(WebhookDelivery, { id });
    },

    async recordAttempt(delivery, change) {
      return (await em().nativeUpdate(WebhookDelivery, delivery, change)) === 1;
    },

    async setStatus(id, change) {
      await em().nativeUpdate(WebhookSubscription, { id }, change);
    },

    async backlog(lastEventId) {
      const connection = em().getConnection();
      const deliveries = await connection.execute<{ status: string; n: number | string }[]>(
        "select status, count(*) as n from webhook_delivery where status in ('pending', 'failed') group by status",
      );
      const subscriptions = await connection.execute<
        { status: string; enabled: boolean | number; n: number | string; behind: number | string | null }[]
      >(
        'select status, enabled, count(*) as n, sum(case when cursor < ? then ? - cursor else 0 end) as behind ' +
          'from webhook_subscription where deleted_at is null group by status, enabled',
        [lastEventId, lastEventId],
      );
      const result: WebhookBacklog = { pending: 0, failed: 0, undelivered: 0, subscriptions: {} };
      for (const row of deliveries) {
        if (row.status === 'pending') result.pending = Number(row.n);
        if (row.status === 'failed') result.failed = Number(row.n);
      }
      for (const row of subscriptions) {
        result.subscriptions[row.status] = (result.subscriptions[row.status] ?? 0) + Number(row.n);
        if (row.enabled) result.undelivered += Number(row.behind ?? 0);
      }
      return result;
    },
  };
}

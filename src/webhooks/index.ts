// The webhooks module (issue 18): subscriptions, their repair operations and the dispatcher that
// delivers outbox events to them, signed per the Standard Webhooks specification.
import ipaddr from 'ipaddr.js';
import { type Config, ConfigError } from '../config/index.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { Orm } from '../db/orm.ts';
import type { PublishedEvent } from '../events/filter.ts';
import type { EventsModule } from '../events/index.ts';
import type { Logger } from '../observability/logger.ts';
import { type Metrics, type WebhookBacklog, watchWebhookBacklog } from '../observability/metrics.ts';
import { createDispatcher } from './dispatcher.ts';
import { createWebhookService, type WebhookService } from './subscriptions.ts';

export interface WebhooksModule {
  service: WebhookService;
  /** The relay's sink (src/after-commit.ts): new events, kept for the dispatcher's fast path. */
  published(events: readonly PublishedEvent[]): void;
  close(): Promise<void>;
}

export function createWebhooks(deps: {
  orm: Orm;
  config: Config;
  secretBox: SecretBox;
  events: EventsModule;
  logger: Logger;
  metrics: Metrics;
  /** Whose webhook slots a subscription's owner takes (a service account's owner's, 30.7). */
  accountOf?: (userId: string) => string | Promise<string>;
}): WebhooksModule {
  const { config, events } = deps;
  const settings = config.webhooks;
  for (const cidr of settings.allowedNetworks) {
    if (!ipaddr.isValidCIDR(cidr))
      throw new ConfigError(`WEBHOOK_ALLOWED_NETWORKS: ${cidr} is not a CIDR range`);
  }
  const policy = { allowLoopback: settings.allowLoopback, allowedNetworks: settings.allowedNetworks };
  const lastEventId = () => events.tail.lastId;
  let wake = () => {};
  let changed = () => {};
  let settle = async (_id: string) => {};
  const service = createWebhookService({
    orm: deps.orm,
    secretBox: deps.secretBox,
    policy,
    maxPerUser: settings.maxPerUser,
    lastEventId,
    wake: () => wake(),
    changed: () => changed(),
    settle: (id) => settle(id),
  });
  const dispatcher = createDispatcher({
    orm: deps.orm,
    service,
    lastEventId,
    options: { ...policy, ...settings },
    logger: deps.logger,
    metrics: deps.metrics.webhooks,
    userAgent: 'game-asset-tracking-service webhooks',
    accountOf: deps.accountOf,
  });
  wake = dispatcher.wake;
  changed = dispatcher.changed;
  settle = dispatcher.flush;
  watchWebhookBacklog(deps.metrics, () => backlog(deps.orm, lastEventId()));
  return {
    service,
    // New events: kept for the dispatcher, which does the work later, never in the relay's hand-over.
    published: (published) => dispatcher.published(published),
    async close() {
      await dispatcher.stop();
    },
  };
}

/** The webhook backlog gauges' reading: two grouped counts. */
async function backlog(orm: Orm, lastEventId: number): Promise<WebhookBacklog> {
  const em = orm.em.fork();
  const connection = em.getConnection();
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
}

// The webhooks module (issue 18): subscriptions, their repair operations and the dispatcher that
// delivers outbox events to them, signed per the Standard Webhooks specification; and the audit feed
// (./audit-feed.ts), which sends new audit trail entries to `auditRecorded` subscribers, from the
// audit trail itself (never through the outbox).
import ipaddr from 'ipaddr.js';
import { type Config, ConfigError } from '../config/index.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { Database } from '../db/database.ts';
import type { WebhookSubscription } from '../db/entities/WebhookSubscription.ts';
import type { PublishedEvent } from '../events/filter.ts';
import type { EventsModule } from '../events/index.ts';
import type { Logger } from '../observability/logger.ts';
import { type Metrics, watchWebhookBacklog } from '../observability/metrics.ts';
import { createAuditFeed } from './audit-feed.ts';
import { createDispatcher } from './dispatcher.ts';
import { createDeliveryStore } from './store/index.ts';
import { createWebhookService, type WebhookService } from './subscriptions.ts';

export interface WebhooksModule {
  service: WebhookService;
  /** The relay's sink (src/after-commit.ts): new events, kept for the dispatcher's fast path. */
  published(events: readonly PublishedEvent[]): void;
  close(): Promise<void>;
}

export function createWebhooks(deps: {
  database: Database;
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
  let changed = (_committed?: WebhookSubscription) => {};
  let settle = async (_id: string) => {};
  const service = createWebhookService({
    orm: deps.database.orm,
    secretBox: deps.secretBox,
    policy,
    maxPerUser: settings.maxPerUser,
    lastEventId,
    wake: () => wake(),
    changed: (committed) => changed(committed),
    settle: (id) => settle(id),
  });
  const store = createDeliveryStore(deps.database.orm, deps.logger);
  const dispatcher = createDispatcher({
    store,
    events: events.store,
    service,
    lastEventId,
    newestPriceUpdate: () => events.tail.newestPriceUpdate,
    options: { ...policy, ...settings },
    logger: deps.logger,
    metrics: deps.metrics.webhooks,
    userAgent: 'game-asset-tracking-service webhooks',
    accountOf: deps.accountOf,
  });
  const auditFeed = createAuditFeed({
    database: deps.database,
    service,
    options: { ...policy, timeoutMs: settings.timeoutMs, retryBaseMs: settings.retryBaseMs },
    userAgent: 'game-asset-tracking-service webhooks',
    logger: deps.logger,
  });
  wake = dispatcher.wake;
  changed = (committed) => {
    dispatcher.changed(committed);
    auditFeed.changed();
  };
  settle = dispatcher.flush;
  watchWebhookBacklog(deps.metrics, () => store.backlog(lastEventId()));
  return {
    service,
    // New events: kept for the dispatcher, which does the work later, never in the relay's hand-over.
    published: (published) => dispatcher.published(published),
    async close() {
      await Promise.all([dispatcher.stop(), auditFeed.stop()]);
    },
  };
}

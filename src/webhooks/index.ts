// The webhooks module (issue 18): subscriptions, their repair operations and the dispatcher that
// delivers outbox events to them, signed per the Standard Webhooks specification.
import ipaddr from 'ipaddr.js';
import { type Config, ConfigError } from '../config/index.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { Orm } from '../db/orm.ts';
import type { EventsModule } from '../events/index.ts';
import type { Logger } from '../observability/logger.ts';
import { createDispatcher } from './dispatcher.ts';
import { createWebhookService, type WebhookService } from './subscriptions.ts';

export interface WebhooksModule {
  service: WebhookService;
  close(): Promise<void>;
}

export function createWebhooks(deps: {
  orm: Orm;
  config: Config;
  secretBox: SecretBox;
  events: EventsModule;
  logger: Logger;
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
  const service = createWebhookService({
    orm: deps.orm,
    secretBox: deps.secretBox,
    policy,
    maxPerUser: settings.maxPerUser,
    lastEventId,
    wake: () => wake(),
  });
  const dispatcher = createDispatcher({
    orm: deps.orm,
    service,
    lastEventId,
    options: { ...policy, ...settings },
    logger: deps.logger,
    userAgent: 'game-asset-tracking-service webhooks',
  });
  wake = dispatcher.wake;
  // New events: look at once (the dispatcher does the work later, never in the relay's hand-over).
  const unsubscribe = events.tail.onEvents(() => dispatcher.wake());
  return {
    service,
    async close() {
      unsubscribe();
      await dispatcher.stop();
    },
  };
}

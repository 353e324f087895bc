// Every operation's handler, keyed by operationId, built from the services it calls. The contract
// router (src/http/api.ts) refuses a handler for an operation the contract lacks.
import type { UserRegisteredHook } from '../../auth/accounts.ts';
import type { AuthModule } from '../../auth/index.ts';
import type { PasswordHasher } from '../../auth/passwords.ts';
import type { ChainModule } from '../../chain/index.ts';
import type { Config } from '../../config/index.ts';
import type { Orm } from '../../db/orm.ts';
import type { IdentityService } from '../../domain/identity/service.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import type { EventsModule } from '../../events/index.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { RedisLink } from '../../redis/link.ts';
import type { WebhooksModule } from '../../webhooks/index.ts';
import type { HandlerMap } from '../handler.ts';
import type { ReadCache } from '../read-cache.ts';
import { applicationHandlers } from './applications.ts';
import { auditHandlers } from './audit.ts';
import { authHandlers } from './auth.ts';
import { chainHandlers } from './chain.ts';
import { claimCodeHandlers } from './claim-codes.ts';
import { eventsHandlers } from './events.ts';
import { identityHandlers } from './identity.ts';
import { ledgerHandlers } from './ledger.ts';
import { operationsHandlers } from './operations.ts';
import { serviceAccountHandlers } from './service-accounts.ts';
import { webhookHandlers } from './webhooks.ts';

export interface HandlerServices {
  config: Config;
  orm: Orm;
  metrics: Metrics;
  redis?: RedisLink;
  auth: AuthModule;
  onUserRegistered: UserRegisteredHook;
  /** How registrations hash their password; absent: at the service's cost (BuildOptions.passwordHasher). */
  hashPassword?: PasswordHasher;
  ledger: Ledger;
  readCache: ReadCache;
  identity: IdentityService;
  events: EventsModule;
  webhooks: WebhooksModule;
  chain: ChainModule;
  /** Whether the instance is shutting down (readiness answers 503). */
  draining: () => boolean;
}

export function createHandlers(services: HandlerServices): HandlerMap {
  const { config, orm, auth, events, redis } = services;
  return {
    ...authHandlers({
      orm,
      throttle: auth.throttle,
      onUserRegistered: services.onUserRegistered,
      hashPassword: services.hashPassword,
      onRoleChanged: (userId) => auth.apiKeys.forgetUser(userId),
      issueTokens: auth.issueTokens,
    }),
    ...auditHandlers(orm),
    ...applicationHandlers({ orm, apiKeys: auth.apiKeys, clients: auth.clients, quotas: config.quotas }),
    ...serviceAccountHandlers({
      orm,
      apiKeys: auth.apiKeys,
      clients: auth.clients,
      limit: config.quotas.serviceAccountsPerUser,
      onUserRegistered: services.onUserRegistered,
    }),
    ...webhookHandlers(services.webhooks.service),
    ...ledgerHandlers(services.ledger, services.readCache),
    // Claim codes (issue 36): their guesses count on the deployment's rate limiter.
    ...claimCodeHandlers(services.ledger, auth.limiter),
    ...chainHandlers(services.chain),
    ...identityHandlers(services.identity, {
      ...config.verify,
      // 13.4: one verification uses VERIFY_RATE_COST units of the key's budget (1 at the door).
      charge: async (apiKeyId) =>
        auth.limiter.hit(
          `key:${apiKeyId}`,
          config.rateLimit.requestsPerWindow,
          config.rateLimit.windowSeconds,
          config.verify.cost - 1,
        ),
    }),
    ...eventsHandlers({
      store: events.store,
      tail: events.tail,
      tickets: events.tickets,
      publicUrl: config.publicUrl,
    }),
    ...operationsHandlers({
      metrics: services.metrics,
      chains: () => services.chain.status(),
      publicUrl: config.publicUrl,
      pingDatabase: async () => {
        await orm.em.getConnection().execute('select 1');
      },
      redisAnswers: redis ? () => redis.answers() : undefined,
      draining: services.draining,
    }),
  };
}

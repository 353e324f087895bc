// Builds the whole application (HTTP edge, domain services, storage) without listening, so tests run
// the real app in-process. src/server.ts listens.

import { type Server, ServerResponse } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import type { MikroORM } from '@mikro-orm/core';
import Koa from 'koa';
import { announceCommits, deliverCommits } from './after-commit.ts';
import type { UserRegisteredHook } from './auth/accounts.ts';
import { apiKeyIsActive } from './auth/api-keys.ts';
import { EXPLORER_CLIENT_ID } from './auth/applications.ts';
import { type AuthModule, createAuthModule } from './auth/index.ts';
import { grantableScopes } from './auth/scopes.ts';
import { createChainModule } from './chain/index.ts';
import { type Config, ConfigError } from './config/index.ts';
import { bundledOperations } from './contract/operations.ts';
import { createSecretBox, resolveSecret } from './crypto/secret-box.ts';
import { Application } from './db/entities/Application.ts';
import { closeDatabase, migrate, type Orm, openDatabase, poolStats, withStartupLock } from './db/orm.ts';
import { readStatements } from './db/read-statements.ts';
import { externalCommitCounter } from './db/write-statements.ts';
import { AppError, OutcomeUnknownError, RETRY_AFTER_SECONDS } from './domain/errors.ts';
import { createIdentityService } from './domain/identity/service.ts';
import { createLedger } from './domain/ledger/index.ts';
import { commitHookOf } from './events/commit-hook.ts';
import { createEvents, type EventsModule } from './events/index.ts';
import { type ContractRouter, createContractRouter } from './http/api.ts';
import { docsStatic } from './http/docs-static.ts';
import { explorerStatic } from './http/explorer-static.ts';
import { createHandlers } from './http/handlers/index.ts';
import { listenerScope } from './http/management.ts';
import { bodyParseError, errorMiddleware } from './http/problem.ts';
import { ledgerVersion, ReadCache } from './http/read-cache.ts';
import { requestContext } from './http/request-context.ts';
import { securityHeaders } from './http/security-headers.ts';
import { createLogger, type Logger } from './observability/logger.ts';
import { createMetrics, type Metrics, watchChains, watchDependencies } from './observability/metrics.ts';
import { createRedisLink, type RedisLink } from './redis/link.ts';
import { activeDemoAccounts, seedDemoIfEmpty } from './seed/demo.ts';
import { createWebhooks } from './webhooks/index.ts';
import { upgradeCredentials } from './ws/credentials.ts';
import { Gateway } from './ws/gateway.ts';
import { MessageParser } from './ws/protocol.ts';

export interface AppInstance {
  koa: Koa;
  config: Config;
  orm: MikroORM;
  logger: Logger;
  metrics: Metrics;
  router: ContractRouter;
  /** Access control (oidc-provider, API keys, signing-key rotation). */
  auth: AuthModule;
  events: EventsModule;
  gateway: Gateway;
  /** Serialized answers of the hottest reads (src/http/read-cache.ts). */
  readCache: ReadCache;
  /**
   * Demo accounts that still accept their published passwords (usernames); empty on a real
   * deployment.
   */
  demoAccounts: string[];
  /** The interface to listen on: HOST when set, else loopback while demo accounts exist, else all. */
  listenHost: string;
  /** Serves the WebSocket channels on this HTTP server's upgrade requests. */
  attach(server: Server): void;
  /**
   * Graceful shutdown of the real-time side: hands every committed event to the sockets (bounded
   * wait), then closes them with 1001 (clients resume elsewhere) and stops the relay.
   */
  drain(): Promise<void>;
  /** Releases every resource (database, timers, connections). */
  close(): Promise<void>;
}

export interface BuildOptions {
  logger?: Logger;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * 14.6: every instance must be the same issuer. The explorer's client, rewritten at each start from
 * PUBLIC_URL, records the URL the service was last started with; another one is refused unless the
 * operator moves the service on purpose (PUBLIC_URL_CHANGE=allow).
 */
async function checkPublicUrl(orm: Orm, config: Config): Promise<void> {
  if (config.publicUrlChange === 'allow') return;
  const explorer = await orm.em.fork().findOne(Application, { clientId: EXPLORER_CLIENT_ID });
  const recorded = explorer?.redirectUris[0]?.replace(/\/explorer\/callback$/, '');
  if (recorded && recorded !== config.publicUrl)
    throw new ConfigError(
      `PUBLIC_URL is ${config.publicUrl} but this database's service runs at ${recorded}: every instance must use the same PUBLIC_URL (the OAuth issuer); to move the service, start once with PUBLIC_URL_CHANGE=allow`,
    );
}

/** AES-GCM's answer when a sealed value is opened with another key than the one that sealed it. */
function sealedWithAnotherKey(error: unknown): boolean {
  return error instanceof Error && /unable to authenticate data/i.test(error.message);
}

function wrongSecretKey(): ConfigError {
  return new ConfigError(
    'SECRET_KEY does not open the keys stored in this database (they were sealed with another SECRET_KEY); start with the SECRET_KEY the other instances use',
  );
}

/** How long start-up waits for Redis (REDIS_URL) to answer before failing. */
const REDIS_STARTUP_TIMEOUT_MS = 5_000;

/** How long shutdown waits for the relay to hand committed events to sockets before closing them. */
const RELAY_FLUSH_LIMIT_MS = 2_000;

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<AppInstance> {
  let draining: Promise<void> | null = null;
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = createMetrics();
  const orm = await openDatabase({
    databaseUrl: config.databaseUrl,
    sqlitePath: config.sqlitePath,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    logger,
  });
  const redis = config.redisUrl ? createRedisLink(config.redisUrl, config.redisKeyPrefix, logger) : undefined;
  try {
    // Instances started together take turns through the bootstrap (src/db/orm.ts).
    const services = await withStartupLock(orm, () =>
      createServices(config, { orm, logger, metrics, redis }),
    );
    const { events, auth, identity, webhooks, chain } = services;
    const { demoAccounts, listenHost } = await demoGuard(orm, config, logger);
    // Cached reads are invalidated by what committed changes touched (src/after-commit.ts); a commit
    // by another process on the same SQLite file empties the cache.
    // The read connection is opened first: SQLite counts its opening as a change by another connection.
    await readStatements(orm).all('select 1', []);
    const version = ledgerVersion(await externalCommitCounter(orm));
    const readCache = new ReadCache(version, {
      maxEntries: config.readCache.maxEntries,
      maxBytes: config.readCache.maxMegabytes * 1024 * 1024,
    });
    const handlers = createHandlers({
      ...services,
      config,
      orm,
      metrics,
      redis,
      readCache,
      draining: () => draining !== null,
    });
    const router = await createContractRouter(bundledOperations(), handlers, auth.authenticator);
    const koa = createKoa(config, { logger, metrics, auth, router });
    const gateway = new Gateway({
      config,
      logger,
      metrics,
      store: events.store,
      tail: events.tail,
      parser: new MessageParser(),
      ...upgradeCredentials({
        authenticator: auth.authenticator,
        tickets: events.tickets,
        apiKeyIsActive: (keyId) => apiKeyIsActive(orm, keyId),
        createContext: (request) => koa.createContext(request, new ServerResponse(request)),
      }),
      redis,
    });
    // Every part exists now: the relay's sinks (the read cache, the sockets, the webhooks).
    const stopDelivering = deliverCommits(commitHookOf(orm), events.tail, { readCache, gateway, webhooks });
    watchDependencies(metrics, {
      pool: () => poolStats(orm),
      redisUsable: redis ? () => redis.usable() : undefined,
    });
    watchChains(metrics, () => chain.status());
    if (redis) await redisAnswers(redis);

    const drain = () => {
      draining ??= drainRealtime(events, gateway);
      return draining;
    };
    return {
      koa,
      config,
      orm,
      logger,
      metrics,
      router,
      auth,
      events,
      gateway,
      readCache,
      demoAccounts,
      listenHost,
      attach(server) {
        server.on('upgrade', (request, socket, head) => void gateway.handleUpgrade(request, socket, head));
      },
      drain,
      async close() {
        await drain();
        stopDelivering();
        await chain.stop();
        await webhooks.close();
        await auth.close();
        await identity.close();
        await events.close();
        await redis?.close();
        await closeDatabase(orm);
      },
    };
  } catch (error) {
    await redis?.close();
    await closeDatabase(orm);
    throw error;
  }
}

interface Infrastructure {
  orm: Orm;
  logger: Logger;
  metrics: Metrics;
  redis?: RedisLink;
}

/**
 * Migrations, then the services in dependency order: events, ledger, access control, demo data,
 * identity. Runs under the start-up lock.
 */
async function createServices(config: Config, { orm, logger, metrics, redis }: Infrastructure) {
  await migrate(orm);
  const events = await createEvents({ orm, config, logger, metrics, redis });
  // A commit reaches the relays from now on (src/after-commit.ts); their sinks are wired once built.
  announceCommits(commitHookOf(orm), events.bus, events.tail);
  const secret = resolveSecret(config.secretKey, config.dataDir, !config.databaseUrl);
  const secretBox = createSecretBox(secret);
  const ledger = createLedger({ orm, config, secretBox });
  const onUserRegistered: UserRegisteredHook = (em, user) =>
    ledger.wallets.createCustodialWallet(em, user.id);
  await checkPublicUrl(orm, config);
  const auth = await createAuthModule({
    config,
    orm,
    logger,
    secretBox,
    secret,
    redis,
    onRedisFallback: () => metrics.redisFallbacks.inc({ use: 'rate limits' }),
  }).catch((error: unknown) => {
    throw sealedWithAnotherKey(error) ? wrongSecretKey() : error;
  });
  if (config.seedDemo === 'always' || (config.seedDemo === 'auto' && !config.databaseUrl)) {
    await seedDemoIfEmpty({ orm, ledger, publicUrl: config.publicUrl, logger, onUserRegistered });
  }
  const identity = await createIdentityService({
    orm,
    secretBox,
    publicUrl: config.publicUrl,
    maxValidityDays: config.credentialMaxValidityDays,
    verifyWorkers: config.verify.workers,
    permissionsOfRole: grantableScopes,
  });
  const webhooks = createWebhooks({
    orm,
    config,
    secretBox,
    events,
    logger,
    metrics,
    accountOf: auth.owners.of,
  });
  const chain = await createChainModule({ orm, config, logger });
  return { events, ledger, auth, identity, webhooks, chain, onUserRegistered };
}

/** 15.3: published passwords must not be reachable from the network by default. */
async function demoGuard(orm: Orm, config: Config, logger: Logger) {
  const demoAccounts = await activeDemoAccounts(orm);
  const listenHost = config.host ?? (demoAccounts.length > 0 ? '127.0.0.1' : '0.0.0.0');
  if (demoAccounts.length > 0) {
    logger.warn(
      { demoAccounts, host: listenHost },
      config.host === undefined
        ? `demo accounts with published passwords exist (${demoAccounts.join(', ')}): listening on loopback only; set HOST to listen elsewhere, after changing their passwords or starting on an empty database with SEED_DEMO=never`
        : `demo accounts with published passwords exist (${demoAccounts.join(', ')}) and HOST=${config.host} is set: anyone who reaches this address can sign in as them`,
    );
  }
  return { demoAccounts, listenHost };
}

/** The HTTP middleware stack, outermost first. */
function createKoa(
  config: Config,
  parts: {
    logger: Logger;
    metrics: Metrics;
    auth: AuthModule;
    router: ContractRouter;
  },
): Koa {
  const koa = new Koa({ proxy: config.trustProxy });
  koa.silent = true; // errors are logged by the error middleware, with the request id
  koa.use(requestContext(parts.logger, parts.metrics));
  koa.use(errorMiddleware());
  koa.use(listenerScope(config.management !== undefined));
  koa.use(requestTimeout(config.requestTimeoutMs));
  koa.use(securityHeaders(config.corsOrigins));
  koa.use(parts.auth.middleware);
  koa.use(docsStatic({ publicUrl: config.publicUrl }));
  koa.use(explorerStatic({ publicUrl: config.publicUrl }));
  koa.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: config.bodyLimitBytes,
      encoding: 'utf-8',
      onError: (error) => {
        throw bodyParseError(error as { status?: number });
      },
    }),
  );
  koa.use(parts.router.middleware);
  return koa;
}

/** Every Redis client exists now; an unreachable Redis at start-up is a configuration error. */
async function redisAnswers(redis: RedisLink): Promise<void> {
  await redis.ready(REDIS_STARTUP_TIMEOUT_MS).catch((error: unknown) => {
    throw new ConfigError(
      `REDIS_URL: Redis did not answer at start-up (${error instanceof Error ? error.message : String(error)})`,
    );
  });
}

/** Hands committed events to the sockets (bounded wait), closes them with 1001, stops the relay. */
async function drainRealtime(events: EventsModule, gateway: Gateway): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, RELAY_FLUSH_LIMIT_MS);
  });
  await Promise.race([events.tail.flush().catch(() => undefined), limit]);
  clearTimeout(timer);
  gateway.close();
  events.tail.stop();
}

/**
 * Answers 503 when a request outlives the limit, so a stuck dependency never hangs a client. A
 * state-changing request keeps running after its answer and may still commit: its answer says the
 * outcome is unknown and how to learn it, never "try again later" (issue 14.3).
 */
function requestTimeout(ms: number) {
  return async function limitTime(ctx: Koa.Context, next: Koa.Next): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            SAFE_METHODS.has(ctx.method)
              ? new AppError(503, '/problems/timeout', {
                  detail: 'The request took too long; try again later.',
                  headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
                })
              : new OutcomeUnknownError('The request ran out of time before its answer was ready.'),
          ),
        ms,
      );
    });
    try {
      await Promise.race([next(), expired]);
    } finally {
      clearTimeout(timer);
    }
  };
}

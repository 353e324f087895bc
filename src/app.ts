// Builds the whole application (HTTP edge, domain services, storage) without listening, so tests run
// the real app in-process. src/server.ts listens. The checks that refuse or warn at start-up are in
// ./startup-checks.ts, the real-time side's shutdown in ./drain.ts.

import { type Server, ServerResponse } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import type { MikroORM } from '@mikro-orm/core';
import Koa from 'koa';
import { announceCommits, deliverCommits } from './after-commit.ts';
import type { UserRegisteredHook } from './auth/accounts.ts';
import { apiKeyIsActive } from './auth/api-keys.ts';
import { type AuthModule, createAuthModule } from './auth/index.ts';
import type { PasswordHasher } from './auth/passwords.ts';
import { grantableScopes } from './auth/scopes.ts';
import { createChainModule } from './chain/index.ts';
import type { Config } from './config/index.ts';
import { bundledOperations } from './contract/operations.ts';
import { createSecretBox, resolveSecret } from './crypto/secret-box.ts';
import { type Database, openDatabase } from './db/database.ts';
import { migrate, withStartupLock } from './db/orm.ts';
import { ReadReplicas } from './db/replicas.ts';
import { checkpointOnThread } from './db/sqlite-checkpoints.ts';
import { currentPrincipal } from './domain/audit.ts';
import { createIdentityService } from './domain/identity/service.ts';
import { createLedger } from './domain/ledger/index.ts';
import { type MarketKeeper, startMarketKeeper } from './domain/ledger/market-keeper.ts';
import { type LedgerDatabase, ledgerDatabase } from './domain/ledger/store/index.ts';
import { drainRealtime } from './drain.ts';
import { createEvents, type EventsModule } from './events/index.ts';
import { type ContractRouter, createContractRouter } from './http/api.ts';
import { docsStatic } from './http/docs-static.ts';
import { explorerStatic } from './http/explorer-static.ts';
import { createHandlers } from './http/handlers/index.ts';
import { listenerScope } from './http/management.ts';
import { bodyParseError, errorMiddleware } from './http/problem.ts';
import { ledgerVersion, ReadCache } from './http/read-cache.ts';
import { requestContext } from './http/request-context.ts';
import { requestTimeout } from './http/request-timeout.ts';
import { securityHeaders } from './http/security-headers.ts';
import { createLogger, type Logger } from './observability/logger.ts';
import {
  createMetrics,
  type Metrics,
  watchChains,
  watchDependencies,
  watchReplicas,
} from './observability/metrics.ts';
import type { RedisLink } from './redis/link.ts';
import { seedDemoIfEmpty } from './seed/demo.ts';
import { checkPublicUrl, demoGuard, redisAnswers, secretKeyFailure } from './startup-checks.ts';
import { createWebhooks } from './webhooks/index.ts';
import { upgradeCredentials } from './ws/credentials.ts';
import { Gateway } from './ws/gateway.ts';
import { MessageParser } from './ws/protocol.ts';

export interface AppInstance {
  koa: Koa;
  config: Config;
  orm: MikroORM;
  /** The ORM with the one ledger store over it and its commit hook (src/domain/ledger/store/index.ts). */
  database: LedgerDatabase;
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
  /** The marketplace's sweeper of expired listings and offers (issue 35). */
  marketKeeper: MarketKeeper;
  /** Serves the WebSocket channels on this HTTP server's upgrade requests. */
  attach(server: Server): void;
  /**
   * Graceful shutdown of the real-time side: hands every committed event to the sockets (bounded
   * wait), then closes them with 1001 (clients resume elsewhere) and stops the relay.
   */
  drain(): Promise<void>;
  /** Releases every resource (database, timers, connections). */
  close(): Promise<void>;
  /** The part `close()` is waiting for (`drain`, `webhooks`, `database`, ...); null before and after. */
  closing(): string | null;
}

export interface BuildOptions {
  logger?: Logger;
  /**
   * How registrations hash new passwords (src/auth/passwords.ts). Only code building the app in its
   * own process can set it (the tests' apps store fixture users' passwords at a test's cost); the
   * service (src/server.ts) never does, so it hashes at the service's cost.
   */
  passwordHasher?: PasswordHasher;
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<AppInstance> {
  let draining: Promise<void> | null = null;
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = createMetrics();
  // The database handle (src/db/database.ts): made here once, passed to what needs it.
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    sqlitePath: config.sqlitePath,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    logger,
  });
  const { orm } = db;
  // The Redis client is loaded only with REDIS_URL set.
  const redis = config.redisUrl
    ? (await import('./redis/link.ts')).createRedisLink(config.redisUrl, config.redisKeyPrefix, logger)
    : undefined;
  let replicas: ReadReplicas | undefined;
  try {
    // Issue 34.6: reads from streaming replicas, read-your-writes kept (src/db/replicas.ts).
    replicas = await openReplicas(config, { db, logger, metrics, redis });
    // Instances started together take turns through the bootstrap (src/db/orm.ts).
    const services = await withStartupLock(orm, () =>
      createServices(config, { db, logger, metrics, redis, replicas }),
    );
    const { database, events, auth, identity, webhooks, chain } = services;
    const { demoAccounts, listenHost } = await demoGuard(orm, config, logger);
    // Cached reads are invalidated by what committed changes touched (src/after-commit.ts); a commit
    // by another process on the same SQLite file empties the cache.
    // The read connection is opened first: SQLite counts its opening as a change by another connection.
    await db.reads.all('select 1', []);
    const version = ledgerVersion(await db.commitCounter());
    const readCache = new ReadCache(version, {
      maxEntries: config.readCache.maxEntries,
      maxBytes: config.readCache.maxMegabytes * 1024 * 1024,
    });
    if (replicas) {
      const routing = replicas;
      readCache.readsFrom((work) => routing.observe(work));
      events.store.useReplicas(routing);
      routing.followRelay(() => events.tail.lastId);
    }
    const handlers = createHandlers({
      ...services,
      config,
      orm,
      metrics,
      redis,
      readCache,
      hashPassword: options.passwordHasher,
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
    const stopDelivering = deliverCommits(database.commits, events.tail, { readCache, gateway, webhooks });
    watchDependencies(metrics, {
      pool: db.poolStats,
      redisUsable: redis ? () => redis.usable() : undefined,
    });
    watchChains(metrics, () => chain.status());
    // Issue 35: every instance ends expired listings and offers (exactly once: guarded plans).
    // Issue 36: and items at their end time (returned to their lender or burned).
    const marketKeeper = startMarketKeeper(
      services.ledger.market,
      logger,
      config.market.sweepMs,
      services.ledger.expiries,
    );
    if (redis) await redisAnswers(redis);

    let closing: string | null = null;
    const drain = () => {
      draining ??= drainRealtime(events, gateway);
      return draining;
    };
    return {
      koa,
      config,
      orm,
      database,
      logger,
      metrics,
      router,
      auth,
      events,
      gateway,
      readCache,
      demoAccounts,
      listenHost,
      marketKeeper,
      attach(server) {
        server.on('upgrade', (request, socket, head) => void gateway.handleUpgrade(request, socket, head));
      },
      drain,
      async close() {
        // In this order, each named: a shutdown that does not end says which part it waits for.
        const parts: [string, () => unknown][] = [
          ['drain', drain],
          ['delivery', stopDelivering],
          ['market', () => marketKeeper.stop()],
          ['chain', () => chain.stop()],
          ['webhooks', () => webhooks.close()],
          ['auth', () => auth.close()],
          ['identity', () => identity.close()],
          ['events', () => events.close()],
          ['redis', () => redis?.close()],
          ['replicas', () => replicas?.close()],
          ['database', () => db.close()],
        ];
        try {
          for (const [part, close] of parts) {
            closing = part;
            await close();
          }
        } finally {
          closing = null;
        }
      },
      closing: () => closing,
    };
  } catch (error) {
    await redis?.close();
    await replicas?.close();
    await db.close();
    throw error;
  }
}

interface Infrastructure {
  db: Database;
  logger: Logger;
  metrics: Metrics;
  redis?: RedisLink;
  replicas?: ReadReplicas;
}

/** The read replicas of DATABASE_READ_URLS (none: undefined), with their metrics. */
async function openReplicas(
  config: Config,
  { db, logger, metrics, redis }: Omit<Infrastructure, 'replicas'>,
): Promise<ReadReplicas | undefined> {
  if (config.readReplicas.urls.length === 0) return undefined;
  let routed: ReturnType<typeof watchReplicas> | undefined;
  // Several instances (REDIS_URL): each tells the others which principals committed.
  const notices = redis
    ? (await import('./db/replica-notices.ts')).redisCommitNotices(redis, logger)
    : undefined;
  const replicas = await ReadReplicas.open(db, config.readReplicas, {
    principal: currentPrincipal,
    notices,
    counted: (target) => routed?.inc({ target }),
    failed: (name, error) => logger.warn({ err: error, replica: name }, 'read replica left out'),
  });
  routed = watchReplicas(metrics, () => replicas.status());
  return replicas;
}

/**
 * Migrations, then the services in dependency order: events, ledger, access control, demo data,
 * identity. Runs under the start-up lock.
 */
async function createServices(config: Config, { db, logger, metrics, redis, replicas }: Infrastructure) {
  const { orm } = db;
  await migrate(orm);
  // SQLite: checkpoints on a thread of their own from now on, off the event loop (src/db/sqlite-checkpoints.ts).
  db.onClose(await checkpointOnThread(orm, logger));
  // The one ledger store over the migrated database, and the hook it announces its commits on.
  const database = ledgerDatabase(db);
  // A principal that committed reads from the primary until a replica has its commit.
  if (replicas) database.commits.onInvalidate(() => replicas.committed());
  const events = await createEvents({ database, config, logger, metrics, redis });
  // A commit reaches the relays from now on (src/after-commit.ts); their sinks are wired once built.
  announceCommits(database.commits, events.bus, events.tail);
  const secret = resolveSecret(config.secretKey, config.dataDir, !config.databaseUrl);
  const secretBox = createSecretBox(secret);
  const ledger = createLedger({ database, config, secretBox, replicas });
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
    throw secretKeyFailure(error);
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
    database,
    config,
    secretBox,
    events,
    logger,
    metrics,
    accountOf: auth.owners.of,
  });
  const chain = await createChainModule({ database, config, logger });
  return { database, events, ledger, auth, identity, webhooks, chain, onUserRegistered };
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

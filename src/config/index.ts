// One typed configuration, read from the environment once at start-up, validated, then passed down.
// Nothing else in src/ reads process.env.
import path from 'node:path';

export interface Config {
  /** Port the HTTP and WebSocket server listens on. */
  port: number;
  /** Interface to bind. */
  host: string;
  /** Public base URL: absolute links, the OAuth issuer and the did:web identity derive from it. */
  publicUrl: string;
  /** PostgreSQL URL; when unset the embedded SQLite file at `sqlitePath` is used. */
  databaseUrl: string | undefined;
  sqlitePath: string;
  /** Directory for embedded state (SQLite file, generated secrets). */
  dataDir: string;
  /** Redis URL for multi-instance event fan-out and shared rate-limit counters. */
  redisUrl: string | undefined;
  /** Seed demo data: 'auto' seeds an empty embedded database, 'always' seeds any empty database, 'never'. */
  seedDemo: 'auto' | 'always' | 'never';
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  /** A request still running after this many milliseconds is answered 503. */
  requestTimeoutMs: number;
  /** Seconds a draining server waits for in-flight requests on SIGTERM before closing anyway. */
  shutdownGraceMs: number;
  /** Trust X-Forwarded-* headers (behind a load balancer). */
  trustProxy: boolean;
  /** Origins allowed by CORS (exact matches); empty = no cross-origin access. */
  corsOrigins: string[];
  /** Secret used to encrypt private keys at rest (custodial wallets, held DID keys, signing keys). */
  secretKey: string | undefined;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  rateLimit: { requestsPerWindow: number; windowSeconds: number; loginPerWindow: number };
  idempotencyTtlSeconds: number;
  eventRetentionDays: number;
  /** Serialized answers of the hottest reads kept per instance (see src/http/read-cache.ts); 0 = off. */
  readCache: { maxEntries: number; maxMegabytes: number };
  ws: {
    heartbeatMs: number;
    maxSubscriptionsPerConnection: number;
    maxConnectionsPerKey: number;
    maxMessageBytes: number;
    maxBufferedBytes: number;
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}; got "${raw}"`);
  }
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}; got "${raw}"`);
  }
  return raw as T;
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}; got ${parsed.protocol}`);
  }
  return raw;
}

/** Reads and validates the configuration; throws ConfigError with a message naming the variable. */
export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const dataDir = path.resolve(env.DATA_DIR || 'data');
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(
    /\/$/,
    '',
  );
  const secretKey = env.SECRET_KEY || undefined;
  if (secretKey !== undefined && secretKey.length < 32) {
    throw new ConfigError('SECRET_KEY must be at least 32 characters');
  }
  return {
    port,
    host: env.HOST || '0.0.0.0',
    publicUrl,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    sqlitePath: path.resolve(env.SQLITE_PATH || path.join(dataDir, 'gats.sqlite')),
    dataDir,
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    seedDemo: oneOf(env, 'SEED_DEMO', ['auto', 'always', 'never'] as const, 'auto'),
    logLevel: oneOf(
      env,
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 100 * 1024, 1024, 10 * 1024 * 1024),
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 15_000, 100, 300_000),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 120_000),
    trustProxy: oneOf(env, 'TRUST_PROXY', ['true', 'false'] as const, 'false') === 'true',
    corsOrigins: (env.CORS_ORIGINS || '')
      .split(',')
      .map((origin) => origin.trim())
      .filter(Boolean),
    secretKey,
    accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL_SECONDS', 900, 60, 86_400),
    refreshTokenTtlSeconds: integer(env, 'REFRESH_TOKEN_TTL_SECONDS', 14 * 86_400, 300, 90 * 86_400),
    rateLimit: {
      requestsPerWindow: integer(env, 'RATE_LIMIT_REQUESTS', 600, 1, 1_000_000),
      windowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
      loginPerWindow: integer(env, 'LOGIN_RATE_LIMIT_REQUESTS', 20, 1, 100_000),
    },
    idempotencyTtlSeconds: integer(env, 'IDEMPOTENCY_TTL_SECONDS', 86_400, 60, 30 * 86_400),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    readCache: {
      maxEntries: integer(env, 'READ_CACHE_ENTRIES', 10_000, 0, 1_000_000),
      maxMegabytes: integer(env, 'READ_CACHE_MB', 64, 1, 4096),
    },
    ws: {
      heartbeatMs: integer(env, 'WS_HEARTBEAT_MS', 30_000, 100, 600_000),
      maxSubscriptionsPerConnection: integer(env, 'WS_MAX_SUBSCRIPTIONS', 20, 1, 1000),
      maxConnectionsPerKey: integer(env, 'WS_MAX_CONNECTIONS_PER_KEY', 100, 1, 100_000),
      maxMessageBytes: integer(env, 'WS_MAX_MESSAGE_BYTES', 16 * 1024, 256, 1024 * 1024),
      maxBufferedBytes: integer(env, 'WS_MAX_BUFFERED_BYTES', 1024 * 1024, 16 * 1024, 64 * 1024 * 1024),
    },
  };
}

// One typed configuration, read from the environment once at start-up, validated, then passed down.
// Nothing else in src/ reads process.env.
//
// Every variable is declared once, in `configSchema` below (zod): its type, range, default and the
// sentence the configuration reference's table shows (`npm run gen` writes that table, in
// docs/operations/configuration.md, from this schema; `npm run gen:check` fails when it drifts). To add a variable: add it to `configSchema` with a
// `description` (and `defaultText` when the default is derived), add its field to `Config`, map it in
// `loadConfig`, then run `npm run gen`.
import path from 'node:path';
import { z } from 'zod';

export interface Config {
  /** Port the HTTP and WebSocket server listens on. */
  port: number;
  /**
   * Interface to bind, when HOST is set. Unset: all interfaces, or loopback only while demo accounts
   * with their published passwords exist (decided at start-up: `AppInstance.listenHost`).
   */
  host: string | undefined;
  /**
   * The management listener (MANAGEMENT_PORT): `/healthz`, `/readyz` and `/metrics` on their own
   * address and port, and no longer on the public port. Unset: they are served on the public port.
   * `host` unset: the public listener's interface.
   */
  management: { port: number; host: string | undefined } | undefined;
  /** Public base URL: absolute links, the OAuth issuer and the did:web identity derive from it. */
  publicUrl: string;
  /** Whether a PUBLIC_URL other than the one the database was set up with may take over. */
  publicUrlChange: 'refuse' | 'allow';
  /** PostgreSQL URL; when unset the embedded SQLite file at `sqlitePath` is used. */
  databaseUrl: string | undefined;
  sqlitePath: string;
  /**
   * PostgreSQL: time allowed to open a connection or get a free pooled one; beyond it the request
   * is answered 503 and start-up fails.
   */
  databaseConnectTimeoutMs: number;
  /** Directory for embedded state (SQLite file, generated secrets). */
  dataDir: string;
  /** Redis URL for multi-instance event fan-out and shared rate-limit counters. */
  redisUrl: string | undefined;
  /** Starts every Redis key and channel name, so several deployments can share one Redis. */
  redisKeyPrefix: string;
  /** Seed demo data: 'auto' seeds an empty embedded database, 'always' seeds any empty database, 'never'. */
  seedDemo: 'auto' | 'always' | 'never';
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  /** A request still running after this many milliseconds is answered 503. */
  requestTimeoutMs: number;
  /** Seconds a draining server waits for in-flight requests on SIGTERM before closing anyway. */
  shutdownGraceMs: number;
  /** Hard limit on a shutdown: past it the process exits non-zero whatever is stuck. */
  shutdownTimeoutSeconds: number;
  /** Trust X-Forwarded-* headers (behind a load balancer). */
  trustProxy: boolean;
  /** Origins allowed by CORS (exact matches); empty = no cross-origin access. */
  corsOrigins: string[];
  /** Secret used to encrypt private keys at rest (custodial wallets, held DID keys, signing keys). */
  secretKey: string | undefined;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  rateLimit: {
    /** Per API key, every operation that takes one. */
    requestsPerWindow: number;
    windowSeconds: number;
    loginPerWindow: number;
    /** Per user, every authenticated operation, all of the user's keys and tokens together. */
    userRequestsPerWindow: number;
    /** Per user, account management (API keys and applications: `x-rate-limit: account`). */
    accountRequestsPerWindow: number;
  };
  /** What one user may hold at once. */
  quotas: { apiKeysPerUser: number; applicationsPerUser: number; serviceAccountsPerUser: number };
  /** Caps on open trade proposals (30.10, src/domain/ledger/trades.ts). */
  trades: { maxOpenPerProposer: number; maxOpenPerCounterparty: number };
  idempotencyTtlSeconds: number;
  eventRetentionDays: number;
  /** Identity: the longest (and default) lifetime of an issued credential, in days. */
  credentialMaxValidityDays: number;
  /** Identity verification limits (13.4): body size, JSON nodes, worker threads, rate cost. */
  verify: { bodyLimitBytes: number; maxJsonNodes: number; workers: number; cost: number };
  /** Serialized answers of the hottest reads kept per instance (see src/http/read-cache.ts); 0 = off. */
  readCache: { maxEntries: number; maxMegabytes: number };
  /** Webhooks (src/webhooks/): targets, timeouts, concurrency, retries, quota. */
  webhooks: {
    allowLoopback: boolean;
    allowedNetworks: string[];
    timeoutMs: number;
    concurrency: number;
    /** Of `concurrency`, the most one user's (and its service accounts') subscriptions hold (30.7). */
    concurrencyPerOwner: number;
    retryBaseMs: number;
    retryWindowSeconds: number;
    disableAfterSeconds: number;
    maxPerUser: number;
  };
  ws: {
    heartbeatMs: number;
    maxSubscriptionsPerConnection: number;
    maxConnectionsPerKey: number;
    maxConnectionsPerUser: number;
    maxMessageBytes: number;
    maxBufferedBytes: number;
    /** Origins a browser may open a WebSocket from (exact `scheme://host[:port]`); no Origin header: not checked. */
    allowedOrigins: string[];
    /** A resume point more than this many event ids behind the newest event answers `resync_required`. */
    maxReplayEvents: number;
    /** Replays in flight at once per API key and per user (one per connection); more wait their turn. */
    maxReplaysPerKey: number;
    maxReplaysPerUser: number;
  };
  /** On-chain assets (src/chain/): the EVM chains indexed and how their nodes are read. */
  chain: ChainSettings;
}

export interface ChainEndpoint {
  chainId: number;
  rpcUrl: string;
  /** Blocks on top of a block before its transfers count as confirmed (events are emitted then). */
  confirmations: number;
}

export interface ChainSettings {
  chains: ChainEndpoint[];
  /** JSON-RPC requests per second per chain, at most (a token bucket, burst of the same size). */
  rpcRate: number;
  /** Largest block range one eth_getLogs asks for; halved on "range too large" or a time-out, grown back on success. */
  maxBlockRange: number;
  /** The deepest backfill (head - fromBlock) a non-admin may register; absent: no bound. */
  maxBackfillBlocks?: number;
  /** How often the head is polled when the indexer has caught up. */
  pollMs: number;
  /** One JSON-RPC request's time limit. */
  rpcTimeoutMs: number;
  /** Whether this instance runs the indexer (one indexer per deployment holds the lock; others wait). */
  indexer: boolean;
  /** The token metadata fetcher (src/chain/metadata.ts); absent: off. */
  metadata?: ChainMetadataSettings;
}

export interface ChainMetadataSettings {
  /** `https://host` of the IPFS gateway `ipfs://` URIs are read through. */
  ipfsGateway: string;
  allowLoopback: boolean;
  allowedNetworks: string[];
  timeoutMs: number;
  maxBytes: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * What the configuration reference's table shows besides the schema's own type, range and default: `description`,
 * `defaultText` (a default derived from other variables, in words), `allowed` (values, in words,
 * when the schema's type does not say it), `secret` (the value is never repeated in error messages).
 */
type VariableMeta = {
  description: string;
  defaultText?: string;
  allowed?: string;
  secret?: boolean;
};

const meta = (value: VariableMeta) => value;

/** An integer from `min` to `max`; unset or empty takes `fallback`. */
const integer = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

const oneOf = <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
  z.enum(values).default(fallback as never);

/** An absolute URL whose scheme is one of `protocols` (e.g. 'https:'); kept as written. */
const url = (protocols: string[]) =>
  z.string().refine((raw) => protocols.includes(URL.parse(raw)?.protocol ?? ''), {
    error: `must be a ${protocols.join(' or ')} URL`,
  });

/** A comma-separated list, trimmed, empty items dropped. */
const list = () =>
  z.string().transform((raw) =>
    raw
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

/** A comma-separated list of exact origins (`scheme://host[:port]`), normalized. */
const origins = () =>
  list().transform((items, context) =>
    items.flatMap((origin) => {
      const parsed = URL.parse(origin);
      if (
        !parsed ||
        !['http:', 'https:'].includes(parsed.protocol) ||
        parsed.pathname !== '/' ||
        parsed.search !== '' ||
        parsed.hash !== '' ||
        parsed.username !== ''
      ) {
        context.addIssue({ code: 'custom', message: `must list origins like https://game.example.com` });
        return [];
      }
      return [parsed.origin];
    }),
  );

const KIB = 1024;
const MIB = 1024 * KIB;
const DAY_SECONDS = 86_400;

/** Every environment variable the service reads: the one source of validation and documentation. */
export const configSchema = z.object({
  PORT: integer(3000, 0, 65535).meta(meta({ description: 'HTTP and WebSocket port' })),
  HOST: z
    .string()
    .optional()
    .meta(
      meta({
        description:
          'interface to bind. Unset, while demo accounts still accept their published passwords the service listens on loopback only and warns, naming them (README, "Demo accounts")',
        defaultText: '`0.0.0.0`; `127.0.0.1` while demo accounts exist',
        allowed: 'IP address or host name',
      }),
    ),
  MANAGEMENT_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .meta(
      meta({
        description:
          'port of the management listener: `/healthz`, `/readyz` and `/metrics` are served there and no longer on `PORT` (404 there), as orchestrator probes and Prometheus scrapes should not share the public port. Unset, they are served on `PORT`',
        defaultText: 'unset',
      }),
    ),
  MANAGEMENT_HOST: z
    .string()
    .optional()
    .meta(
      meta({
        description:
          'interface the management listener binds (with `MANAGEMENT_PORT` only), e.g. `127.0.0.1` for probes and scrapes from the same host only',
        defaultText: "the public listener's (`HOST`)",
        allowed: 'IP address or host name',
      }),
    ),
  PUBLIC_URL: url(['http:', 'https:'])
    .optional()
    .meta(
      meta({
        description:
          'public base URL: OAuth issuer, `did:web` identity, absolute links; the explorer must be opened at this origin',
        defaultText: '`http://localhost:$PORT`',
        allowed: '`http:` or `https:` URL',
      }),
    ),
  PUBLIC_URL_CHANGE: oneOf(['refuse', 'allow'] as const, 'refuse').meta(
    meta({
      description:
        "`refuse`: an instance whose `PUBLIC_URL` differs from the one the database was last started with stops at start-up (exit 78): instances with different issuers reject each other's tokens. `allow`: this start moves the service to the new URL (all instances must then use it)",
    }),
  ),
  DATABASE_URL: url(['postgres:', 'postgresql:'])
    .optional()
    .meta(
      meta({
        description: '`postgres://…` selects PostgreSQL; unset, the embedded SQLite file',
        allowed: '`postgres:` or `postgresql:` URL',
        defaultText: 'unset',
        secret: true,
      }),
    ),
  DATA_DIR: z
    .string()
    .default('data')
    .meta(
      meta({
        description: 'embedded state: SQLite file, generated secret',
        defaultText: '`./data`',
        allowed: 'directory path',
      }),
    ),
  SQLITE_PATH: z
    .string()
    .optional()
    .meta(
      meta({ description: 'the SQLite file', defaultText: '`$DATA_DIR/gats.sqlite`', allowed: 'file path' }),
    ),
  DATABASE_CONNECT_TIMEOUT_MS: integer(5_000, 100, 120_000).meta(
    meta({
      description:
        'PostgreSQL: time to open a connection or get a free pooled one; past it a request is answered 503 `/problems/database-unavailable` and start-up fails',
    }),
  ),
  REDIS_URL: url(['redis:', 'rediss:'])
    .optional()
    .meta(
      meta({
        description:
          '`redis://…`: event fan-out between instances, shared rate-limit counters, WebSocket tickets; must answer at start-up, optional afterwards (docs/operations/failures.md)',
        allowed: '`redis:` or `rediss:` URL',
        defaultText: 'unset',
        secret: true,
      }),
    ),
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_.-]{1,64}$/, { error: 'must be 1 to 64 letters, digits or ":_.-"' })
    .default('gats:')
    .meta(
      meta({
        description: 'starts every Redis key and channel name, so several deployments can share one Redis',
        allowed: '1 to 64 of `A-Z a-z 0-9 : _ . -`',
      }),
    ),
  SECRET_KEY: z
    .string()
    .min(32, { error: 'must be at least 32 characters' })
    .optional()
    .meta(
      meta({
        description:
          'encrypts private keys at rest (custodial wallets, DID keys, token signing keys) and derives cookie keys. **Required with `DATABASE_URL`** (all instances share it)',
        defaultText: 'generated into `$DATA_DIR/secret.key` (embedded only)',
        secret: true,
      }),
    ),
  SEED_DEMO: oneOf(['auto', 'always', 'never'] as const, 'auto').meta(
    meta({ description: '`auto`: seed an empty embedded database; `always`: any empty database; `never`' }),
  ),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info').meta(
    meta({ description: 'pino level; JSON logs on stdout with request ids' }),
  ),
  BODY_LIMIT_BYTES: integer(100 * KIB, KIB, 10 * MIB).meta(
    meta({ description: 'largest JSON body (413 above)' }),
  ),
  REQUEST_TIMEOUT_MS: integer(15_000, 100, 300_000).meta(
    meta({ description: 'a request running longer is answered 503' }),
  ),
  SHUTDOWN_GRACE_MS: integer(10_000, 0, 120_000).meta(
    meta({ description: 'drain time on SIGTERM before remaining connections are closed' }),
  ),
  SHUTDOWN_TIMEOUT_SECONDS: integer(15, 1, 600).meta(
    meta({
      description:
        'hard limit on a shutdown (SIGTERM/SIGINT): past it the process exits with code 70 whatever is stuck',
    }),
  ),
  TRUST_PROXY: oneOf(['true', 'false'] as const, 'false').meta(
    meta({ description: 'trust `X-Forwarded-*` (behind a load balancer)' }),
  ),
  CORS_ORIGINS: list()
    .optional()
    .meta(
      meta({
        description: 'comma-separated exact origins allowed by CORS',
        defaultText: 'empty',
        allowed: 'origins, comma-separated',
      }),
    ),
  ACCESS_TOKEN_TTL_SECONDS: integer(900, 60, DAY_SECONDS).meta(
    meta({ description: 'access token lifetime' }),
  ),
  REFRESH_TOKEN_TTL_SECONDS: integer(14 * DAY_SECONDS, 300, 90 * DAY_SECONDS).meta(
    meta({ description: 'refresh token lifetime' }),
  ),
  RATE_LIMIT_REQUESTS: integer(600, 1, 1_000_000).meta(
    meta({ description: 'requests per API key per window' }),
  ),
  RATE_LIMIT_WINDOW_SECONDS: integer(60, 1, DAY_SECONDS).meta(meta({ description: 'the rate-limit window' })),
  LOGIN_RATE_LIMIT_REQUESTS: integer(20, 1, 100_000).meta(
    meta({ description: 'per client address per window, for login and registration' }),
  ),
  RATE_LIMIT_USER_REQUESTS: integer(1200, 1, 1_000_000).meta(
    meta({
      description:
        "requests per user per window, every authenticated operation, all of the user's keys and tokens together",
    }),
  ),
  RATE_LIMIT_ACCOUNT_REQUESTS: integer(60, 1, 1_000_000).meta(
    meta({
      description:
        'requests per user per window to manage API keys and applications (`/api/v1/api-keys`, `/api/v1/applications`)',
    }),
  ),
  MAX_API_KEYS_PER_USER: integer(50, 1, 10_000).meta(
    meta({ description: 'active API keys one user may hold (one more: 409 `/problems/quota-exceeded`)' }),
  ),
  MAX_APPLICATIONS_PER_USER: integer(20, 1, 10_000).meta(
    meta({ description: 'applications one user may hold (one more: 409 `/problems/quota-exceeded`)' }),
  ),
  MAX_OPEN_TRADES_PER_PROPOSER: integer(20, 1, 10_000).meta(
    meta({
      description:
        "open trade proposals one user may have made (its service accounts' included; one more: 409 `/problems/quota-exceeded`)",
    }),
  ),
  MAX_OPEN_TRADES_PER_COUNTERPARTY: integer(50, 1, 10_000).meta(
    meta({
      description:
        'open trade proposals to one wallet, from everyone (one more: 409 `/problems/quota-exceeded`)',
    }),
  ),
  MAX_SERVICE_ACCOUNTS_PER_USER: integer(10, 1, 10_000).meta(
    meta({
      description: 'service accounts one user may own (one more: 409 `/problems/quota-exceeded`)',
    }),
  ),
  IDEMPOTENCY_TTL_SECONDS: integer(DAY_SECONDS, 60, 30 * DAY_SECONDS).meta(
    meta({ description: 'how long an `Idempotency-Key` is remembered' }),
  ),
  EVENT_RETENTION_DAYS: integer(30, 1, 3650).meta(
    meta({
      description: 'events older than this are pruned; resuming before them answers `resync_required` / 410',
    }),
  ),
  CREDENTIAL_MAX_VALIDITY_DAYS: integer(365, 1, 3650).meta(
    meta({
      description: 'longest (and default) lifetime of an issued credential; a later `validUntil` is a 422',
    }),
  ),
  VERIFY_BODY_LIMIT_BYTES: integer(32 * 1024, 1024, 1024 * 1024).meta(
    meta({ description: 'largest `POST /identity/verify` body (413 above)' }),
  ),
  VERIFY_MAX_JSON_NODES: integer(2000, 50, 100_000).meta(
    meta({
      description:
        'most JSON values (objects, arrays, scalars) a verified credential or presentation may have (413 above)',
    }),
  ),
  VERIFY_WORKERS: integer(1, 0, 64).meta(
    meta({
      description: 'worker threads for credential canonicalization and proof checks (0: on the main thread)',
    }),
  ),
  VERIFY_RATE_COST: integer(10, 1, 1000).meta(
    meta({
      description: "units of the API key's request budget one `POST /identity/verify` uses",
    }),
  ),
  READ_CACHE_ENTRIES: integer(10_000, 0, 1_000_000).meta(
    meta({
      description:
        'cached answers of the asset and holdings reads per instance (0: off); see docs/architecture/decisions.md, "Cached reads"',
    }),
  ),
  READ_CACHE_MB: integer(64, 1, 4096).meta(meta({ description: 'memory bound of those cached answers' })),
  WS_HEARTBEAT_MS: integer(30_000, 100, 600_000).meta(
    meta({ description: 'protocol ping interval; a peer that misses one is dropped' }),
  ),
  WS_MAX_SUBSCRIPTIONS: integer(20, 1, 1000).meta(meta({ description: 'subscriptions per connection' })),
  WS_MAX_CONNECTIONS_PER_KEY: integer(100, 1, 100_000).meta(
    meta({
      description:
        "WebSocket connections per API key, across all instances when `REDIS_URL` is set (each instance's count kept in Redis, refreshed every 10 s, expiring after 30 s so a crashed instance's share ages out); per instance otherwise",
    }),
  ),
  WS_MAX_CONNECTIONS_PER_USER: integer(200, 1, 100_000).meta(
    meta({
      description:
        'WebSocket connections per user over all its API keys, counted like the per-key cap (across instances with Redis); 429 at the upgrade past it',
    }),
  ),
  WS_ALLOWED_ORIGINS: origins()
    .optional()
    .meta(
      meta({
        description:
          "comma-separated origins (`https://host[:port]`) browsers may open WebSockets from; an upgrade with another `Origin` is refused 403 (clients that send no `Origin` are not checked); the explorer's dev server (`npm run explorer:dev`) needs its own origin listed",
        defaultText: 'the origin of `PUBLIC_URL` and the `CORS_ORIGINS`',
        allowed: 'origins, comma-separated',
      }),
    ),
  WEBHOOK_ALLOW_LOOPBACK: oneOf(['true', 'false'] as const, 'false').meta(
    meta({
      description:
        'development only: webhook URLs may use plain `http` on a loopback host, and deliveries may reach loopback addresses',
    }),
  ),
  WEBHOOK_ALLOWED_NETWORKS: list()
    .optional()
    .meta(
      meta({
        description:
          'networks webhooks may reach although private, link-local or otherwise not public (checked at every delivery, after DNS resolution)',
        defaultText: 'empty',
        allowed: 'CIDR ranges, comma-separated (e.g. `10.1.0.0/16`)',
      }),
    ),
  WEBHOOK_TIMEOUT_MS: integer(10_000, 100, 60_000).meta(
    meta({
      description: 'a webhook endpoint must answer within this (else the attempt failed and is retried)',
    }),
  ),
  WEBHOOK_CONCURRENCY: integer(16, 1, 1000).meta(
    meta({
      description:
        'webhook requests in flight at once per instance (one per subscription, so its order holds)',
    }),
  ),
  WEBHOOK_CONCURRENCY_PER_OWNER: integer(4, 1, 1000).meta(
    meta({
      description:
        "of those, at most this many for one user's subscriptions (its service accounts' included): one user's slow receivers never take every slot",
    }),
  ),
  WEBHOOK_RETRY_BASE_MS: integer(5_000, 10, 3_600_000).meta(
    meta({
      description:
        'first retry delay of a failed delivery; each further retry waits twice as long (at most an hour), with full jitter',
    }),
  ),
  WEBHOOK_RETRY_WINDOW_SECONDS: integer(DAY_SECONDS, 1, 30 * DAY_SECONDS).meta(
    meta({
      description:
        'how long a failing delivery is retried; then it is given up and its subscription marked `failing`',
    }),
  ),
  WEBHOOK_DISABLE_AFTER_SECONDS: integer(3 * DAY_SECONDS, 1, 90 * DAY_SECONDS).meta(
    meta({
      description: 'a subscription `failing` this long without a success is disabled (status `disabled`)',
    }),
  ),
  MAX_WEBHOOKS_PER_USER: integer(20, 1, 10_000).meta(
    meta({
      description: 'webhook subscriptions one user may hold (one more: 409 `/problems/quota-exceeded`)',
    }),
  ),
  WS_MAX_REPLAY_EVENTS: integer(10_000, 1, 10_000_000).meta(
    meta({
      description:
        'deepest WebSocket replay, in event ids behind the newest; a `lastEventId` further back answers `resync_required` (`too_far_back`) pointing at `GET /api/v1/events?after=`',
    }),
  ),
  WS_MAX_REPLAYS_PER_KEY: integer(2, 1, 1000).meta(
    meta({
      description:
        'replays running at once per API key on an instance (and always one per connection); further resuming subscribes wait their turn',
    }),
  ),
  WS_MAX_REPLAYS_PER_USER: integer(4, 1, 1000).meta(
    meta({ description: 'replays running at once per user on an instance, like the per-key count' }),
  ),
  WS_MAX_MESSAGE_BYTES: integer(16 * KIB, 256, MIB).meta(meta({ description: 'largest client frame' })),
  WS_MAX_BUFFERED_BYTES: integer(MIB, 16 * KIB, 64 * MIB).meta(
    meta({ description: 'outgoing buffer above which a slow consumer is closed with 4008' }),
  ),
  CHAINS: list()
    .optional()
    .meta(
      meta({
        description:
          'EVM chains whose registered token contracts are indexed, as `<chainId>=<JSON-RPC URL>` items (e.g. `1=https://eth.example/rpc`); a chain can also be given alone as `CHAIN_<chainId>_RPC_URL`, and its confirmations as `CHAIN_<chainId>_CONFIRMATIONS`. Each node must answer `eth_chainId` with its chain id at start-up',
        allowed: '`<chainId>=<http(s) or ws(s) URL>`, comma-separated',
      }),
    ),
  CHAIN_CONFIRMATIONS: integer(12, 0, 10_000).meta(
    meta({
      description:
        'blocks mined on top of a block before its on-chain transfers are confirmed and announced (per chain: `CHAIN_<chainId>_CONFIRMATIONS`); reorgs within this window are rolled back',
    }),
  ),
  CHAIN_RPC_RATE: integer(10, 1, 10_000).meta(
    meta({ description: 'JSON-RPC requests per second per chain the indexer sends at most' }),
  ),
  CHAIN_MAX_BLOCK_RANGE: integer(2000, 1, 1_000_000).meta(
    meta({
      description:
        'largest block range one `eth_getLogs` asks for; halved when the node answers "range too large" or times out, doubled back after successes',
    }),
  ),
  CHAIN_MAX_BACKFILL_BLOCKS: integer(100_000, 0, 1_000_000_000).meta(
    meta({
      description:
        "deepest backfill a studio may register: a contract whose `fromBlock` (raised to its deployment block) is more blocks than this below the chain's head is registered by an admin only",
    }),
  ),
  CHAIN_POLL_MS: integer(2000, 10, 600_000).meta(
    meta({ description: 'head polling interval once the indexer has caught up' }),
  ),
  CHAIN_RPC_TIMEOUT_MS: integer(10_000, 100, 300_000).meta(
    meta({
      description:
        'time limit of one JSON-RPC request; a time-out pauses the chain and retries with back-off',
    }),
  ),
  CHAIN_INDEXER: oneOf(['on', 'off'] as const, 'on').meta(
    meta({
      description:
        '`on`: this instance competes for the one indexer lock per deployment (PostgreSQL advisory lock; SQLite: the one process); `off`: it only serves reads',
    }),
  ),
  CHAIN_METADATA: oneOf(['on', 'off'] as const, 'on').meta(
    meta({
      description:
        "`on`: the indexer fetches a new ERC-721/ERC-1155 token's metadata (`tokenURI`/`uri`) in the background, never holding indexing up; `off`: on-chain tokens keep a placeholder image",
    }),
  ),
  CHAIN_METADATA_IPFS_GATEWAY: url(['https:', 'http:'])
    .default('https://ipfs.io')
    .meta(
      meta({
        description:
          'the HTTPS IPFS gateway `ipfs://` token URIs are read through (`<gateway>/ipfs/<cid>/<path>`)',
      }),
    ),
  CHAIN_METADATA_ALLOW_LOOPBACK: oneOf(['true', 'false'] as const, 'false').meta(
    meta({
      description:
        'development only: token metadata may be read over plain `http` from a loopback host (and from loopback addresses)',
    }),
  ),
  CHAIN_METADATA_ALLOWED_NETWORKS: list()
    .optional()
    .meta(
      meta({
        description:
          'networks token metadata may be read from although private, link-local or otherwise not public (checked after DNS resolution)',
        defaultText: 'empty',
        allowed: 'CIDR ranges, comma-separated (e.g. `10.1.0.0/16`)',
      }),
    ),
  CHAIN_METADATA_TIMEOUT_MS: integer(5000, 100, 60_000).meta(
    meta({ description: 'time limit of one metadata request (3 tries, 1 s and 4 s apart)' }),
  ),
  CHAIN_METADATA_MAX_BYTES: integer(262_144, 1024, 10_485_760).meta(
    meta({ description: 'largest metadata document read; a larger one is refused' }),
  ),
});

export type ConfigVariable = keyof typeof configSchema.shape;

/** The variables' JSON Schema (type, range, allowed values, default, plus `VariableMeta`). */
export function configJsonSchema(): {
  properties: Record<ConfigVariable, Record<string, unknown> & VariableMeta>;
} {
  return z.toJSONSchema(configSchema, { io: 'input' }) as never;
}

/** One line per invalid variable, naming it (and its value, unless secret). */
function describeIssues(error: z.ZodError, env: Env): string {
  const properties = configJsonSchema().properties;
  return error.issues
    .map((issue) => {
      const name = String(issue.path[0]) as ConfigVariable;
      const property = properties[name] ?? {};
      let rule = issue.message;
      if (property.type === 'integer')
        rule = `must be an integer from ${property.minimum} to ${property.maximum}`;
      else if (Array.isArray(property.enum)) rule = `must be one of ${property.enum.join(', ')}`;
      return property.secret ? `${name} ${rule}` : `${name} ${rule}; got "${env[name]}"`;
    })
    .join('\n');
}

type Env = Record<string, string | undefined>;

/** Reads and validates the configuration; throws ConfigError with one line per bad variable, naming it. */
export function loadConfig(env: Env = process.env): Config {
  // An empty variable counts as unset (a `FOO=` line in an env file).
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error, env));
  const e = parsed.data;
  const dataDir = path.resolve(e.DATA_DIR);
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, '');
  const corsOrigins = e.CORS_ORIGINS ?? [];
  if (e.MANAGEMENT_HOST !== undefined && e.MANAGEMENT_PORT === undefined)
    throw new ConfigError(
      'MANAGEMENT_HOST is set without MANAGEMENT_PORT: set MANAGEMENT_PORT too, or neither',
    );
  return {
    port: e.PORT,
    host: e.HOST,
    management:
      e.MANAGEMENT_PORT === undefined ? undefined : { port: e.MANAGEMENT_PORT, host: e.MANAGEMENT_HOST },
    publicUrl,
    publicUrlChange: e.PUBLIC_URL_CHANGE,
    databaseUrl: e.DATABASE_URL,
    sqlitePath: path.resolve(e.SQLITE_PATH ?? path.join(dataDir, 'gats.sqlite')),
    databaseConnectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    dataDir,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    seedDemo: e.SEED_DEMO,
    logLevel: e.LOG_LEVEL,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    shutdownTimeoutSeconds: e.SHUTDOWN_TIMEOUT_SECONDS,
    trustProxy: e.TRUST_PROXY === 'true',
    corsOrigins,
    secretKey: e.SECRET_KEY,
    accessTokenTtlSeconds: e.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: e.REFRESH_TOKEN_TTL_SECONDS,
    rateLimit: {
      requestsPerWindow: e.RATE_LIMIT_REQUESTS,
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      loginPerWindow: e.LOGIN_RATE_LIMIT_REQUESTS,
      userRequestsPerWindow: e.RATE_LIMIT_USER_REQUESTS,
      accountRequestsPerWindow: e.RATE_LIMIT_ACCOUNT_REQUESTS,
    },
    quotas: {
      apiKeysPerUser: e.MAX_API_KEYS_PER_USER,
      applicationsPerUser: e.MAX_APPLICATIONS_PER_USER,
      serviceAccountsPerUser: e.MAX_SERVICE_ACCOUNTS_PER_USER,
    },
    trades: {
      maxOpenPerProposer: e.MAX_OPEN_TRADES_PER_PROPOSER,
      maxOpenPerCounterparty: e.MAX_OPEN_TRADES_PER_COUNTERPARTY,
    },
    idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
    credentialMaxValidityDays: e.CREDENTIAL_MAX_VALIDITY_DAYS,
    verify: {
      bodyLimitBytes: e.VERIFY_BODY_LIMIT_BYTES,
      maxJsonNodes: e.VERIFY_MAX_JSON_NODES,
      workers: e.VERIFY_WORKERS,
      cost: e.VERIFY_RATE_COST,
    },
    readCache: { maxEntries: e.READ_CACHE_ENTRIES, maxMegabytes: e.READ_CACHE_MB },
    webhooks: {
      allowLoopback: e.WEBHOOK_ALLOW_LOOPBACK === 'true',
      allowedNetworks: e.WEBHOOK_ALLOWED_NETWORKS ?? [],
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      concurrency: e.WEBHOOK_CONCURRENCY,
      concurrencyPerOwner: e.WEBHOOK_CONCURRENCY_PER_OWNER,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryWindowSeconds: e.WEBHOOK_RETRY_WINDOW_SECONDS,
      disableAfterSeconds: e.WEBHOOK_DISABLE_AFTER_SECONDS,
      maxPerUser: e.MAX_WEBHOOKS_PER_USER,
    },
    ws: {
      heartbeatMs: e.WS_HEARTBEAT_MS,
      maxSubscriptionsPerConnection: e.WS_MAX_SUBSCRIPTIONS,
      maxConnectionsPerKey: e.WS_MAX_CONNECTIONS_PER_KEY,
      maxConnectionsPerUser: e.WS_MAX_CONNECTIONS_PER_USER,
      maxMessageBytes: e.WS_MAX_MESSAGE_BYTES,
      maxBufferedBytes: e.WS_MAX_BUFFERED_BYTES,
      allowedOrigins: e.WS_ALLOWED_ORIGINS ?? [
        ...new Set([publicUrl, ...corsOrigins].flatMap((origin) => URL.parse(origin)?.origin ?? [])),
      ],
      maxReplayEvents: e.WS_MAX_REPLAY_EVENTS,
      maxReplaysPerKey: e.WS_MAX_REPLAYS_PER_KEY,
      maxReplaysPerUser: e.WS_MAX_REPLAYS_PER_USER,
    },
    chain: {
      chains: chainEndpoints(e.CHAINS ?? [], env, e.CHAIN_CONFIRMATIONS),
      rpcRate: e.CHAIN_RPC_RATE,
      maxBlockRange: e.CHAIN_MAX_BLOCK_RANGE,
      maxBackfillBlocks: e.CHAIN_MAX_BACKFILL_BLOCKS,
      pollMs: e.CHAIN_POLL_MS,
      rpcTimeoutMs: e.CHAIN_RPC_TIMEOUT_MS,
      indexer: e.CHAIN_INDEXER === 'on',
      metadata:
        e.CHAIN_METADATA === 'on'
          ? {
              ipfsGateway: e.CHAIN_METADATA_IPFS_GATEWAY.replace(/\/$/, ''),
              allowLoopback: e.CHAIN_METADATA_ALLOW_LOOPBACK === 'true',
              allowedNetworks: e.CHAIN_METADATA_ALLOWED_NETWORKS ?? [],
              timeoutMs: e.CHAIN_METADATA_TIMEOUT_MS,
              maxBytes: e.CHAIN_METADATA_MAX_BYTES,
            }
          : undefined,
    },
  };
}

const CHAIN_VARIABLE = /^CHAIN_(\d+)_(RPC_URL|CONFIRMATIONS)$/;
const RPC_PROTOCOLS = ['http:', 'https:', 'ws:', 'wss:'];

/**
 * The chains from `CHAINS` (`<id>=<url>` items) and `CHAIN_<id>_RPC_URL` / `CHAIN_<id>_CONFIRMATIONS`
 * (named per chain, so outside the fixed schema); one line per bad item, like the schema's errors.
 */
function chainEndpoints(items: string[], env: Env, defaultConfirmations: number): ChainEndpoint[] {
  const urls = new Map<number, string>();
  const confirmations = new Map<number, number>();
  const problems: string[] = [];
  const chainId = (raw: string): number | undefined => {
    const id = Number(raw);
    return /^\d+$/.test(raw) && Number.isSafeInteger(id) && id > 0 ? id : undefined;
  };
  const rpcUrl = (raw: string) => (RPC_PROTOCOLS.includes(URL.parse(raw)?.protocol ?? '') ? raw : undefined);
  for (const item of items) {
    const at = item.indexOf('=');
    const id = chainId(item.slice(0, at).trim());
    const target = rpcUrl(item.slice(at + 1).trim());
    if (at < 0 || id === undefined || target === undefined) {
      problems.push(`CHAINS items must be <chainId>=<http(s) or ws(s) URL>; got "${item}"`);
    } else if (urls.has(id)) {
      problems.push(`CHAINS names chain ${id} twice`);
    } else urls.set(id, target);
  }
  for (const [name, value] of Object.entries(env)) {
    const match = CHAIN_VARIABLE.exec(name);
    if (!match || value === undefined || value === '') continue;
    const id = chainId(match[1] ?? '');
    if (id === undefined) {
      problems.push(`${name}: the chain id must be a positive integer`);
    } else if (match[2] === 'RPC_URL') {
      const target = rpcUrl(value);
      if (target === undefined) problems.push(`${name} must be an http(s) or ws(s) URL; got "${value}"`);
      else if (urls.has(id) && urls.get(id) !== target)
        problems.push(`${name} and CHAINS give chain ${id} different URLs`);
      else urls.set(id, target);
    } else {
      const count = Number(value);
      if (!/^\d+$/.test(value) || count > 10_000) {
        problems.push(`${name} must be an integer from 0 to 10000; got "${value}"`);
      } else confirmations.set(id, count);
    }
  }
  for (const id of confirmations.keys()) {
    if (!urls.has(id)) problems.push(`CHAIN_${id}_CONFIRMATIONS is set but chain ${id} has no RPC URL`);
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return [...urls]
    .sort(([a], [b]) => a - b)
    .map(([id, target]) => ({
      chainId: id,
      rpcUrl: target,
      confirmations: confirmations.get(id) ?? defaultConfirmations,
    }));
}

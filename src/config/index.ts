// One typed configuration, read from the environment once at start-up, validated, then passed down.
// Nothing else in src/ reads process.env.
//
// Every variable is declared once, as one entry of `settings` below: the field of `Config` it fills
// (a dotted path such as 'webhooks.timeoutMs'; null for the few read only by `derived`, which computes
// the fields that depend on several variables), and its zod schema: its type, range, default and the
// sentence the configuration reference's table shows (`npm run gen` writes that table, in
// docs/operations/configuration.md, from this schema; `npm run gen:check` fails when it drifts). The
// `Config` type and `loadConfig`'s mapping follow from the entries. To add a variable: append an entry
// with a `description` (and `defaultText` when the default is derived), then run `npm run gen`.
import path from 'node:path';
import { z } from 'zod';

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

/**
 * A variable: the field of `Config` it fills (a dotted path; null: read by `derived` only), its schema
 * and what the configuration reference says of it.
 */
const setting = <const P extends string | null, S extends z.ZodType>(
  field: P,
  schema: S,
  about: VariableMeta,
) => ({
  field,
  schema: schema.meta(about),
});

/** `'true'` or `'false'` as a boolean. */
const isTrue = (value: 'true' | 'false') => value === 'true';

/** An unset list is empty. */
const orEmpty = (items: string[] | undefined) => items ?? [];

/** Every environment variable the service reads: the one source of validation and documentation. */
const settings = {
  PORT: setting('port', integer(3000, 0, 65535), { description: 'HTTP and WebSocket port' }),
  HOST: setting('host', z.string().optional(), {
    description:
      'interface to bind. Unset, while demo accounts still accept their published passwords the service listens on loopback only and warns, naming them (README, "Demo accounts")',
    defaultText: '`0.0.0.0`; `127.0.0.1` while demo accounts exist',
    allowed: 'IP address or host name',
  }),
  MANAGEMENT_PORT: setting(null, z.coerce.number().int().min(0).max(65535).optional(), {
    description:
      'port of the management listener: `/healthz`, `/readyz` and `/metrics` are served there and no longer on `PORT` (404 there), as orchestrator probes and Prometheus scrapes should not share the public port. Unset, they are served on `PORT`',
    defaultText: 'unset',
  }),
  MANAGEMENT_HOST: setting(null, z.string().optional(), {
    description:
      'interface the management listener binds (with `MANAGEMENT_PORT` only), e.g. `127.0.0.1` for probes and scrapes from the same host only',
    defaultText: "the public listener's (`HOST`)",
    allowed: 'IP address or host name',
  }),
  PUBLIC_URL: setting(null, url(['http:', 'https:']).optional(), {
    description:
      'public base URL: OAuth issuer, `did:web` identity, absolute links; the explorer must be opened at this origin',
    defaultText: '`http://localhost:$PORT`',
    allowed: '`http:` or `https:` URL',
  }),
  PUBLIC_URL_CHANGE: setting('publicUrlChange', oneOf(['refuse', 'allow'] as const, 'refuse'), {
    description:
      "`refuse`: an instance whose `PUBLIC_URL` differs from the one the database was last started with stops at start-up (exit 78): instances with different issuers reject each other's tokens. `allow`: this start moves the service to the new URL (all instances must then use it)",
  }),
  DATABASE_URL: setting('databaseUrl', url(['postgres:', 'postgresql:']).optional(), {
    description: '`postgres://…` selects PostgreSQL; unset, the embedded SQLite file',
    allowed: '`postgres:` or `postgresql:` URL',
    defaultText: 'unset',
    secret: true,
  }),
  DATA_DIR: setting(
    'dataDir',
    z
      .string()
      .default('data')
      .transform((dir) => path.resolve(dir)),
    {
      description: 'embedded state: SQLite file, generated secret',
      defaultText: '`./data`',
      allowed: 'directory path',
    },
  ),
  SQLITE_PATH: setting(null, z.string().optional(), {
    description: 'the SQLite file',
    defaultText: '`$DATA_DIR/gats.sqlite`',
    allowed: 'file path',
  }),
  DATABASE_CONNECT_TIMEOUT_MS: setting('databaseConnectTimeoutMs', integer(5_000, 100, 120_000), {
    description:
      'PostgreSQL: time to open a connection or get a free pooled one; past it a request is answered 503 `/problems/database-unavailable` and start-up fails',
  }),
  DATABASE_READ_URLS: setting(
    'readReplicas.urls',
    list()
      .pipe(z.array(url(['postgres:', 'postgresql:'])))
      .optional()
      .transform(orEmpty),
    {
      description:
        'PostgreSQL only: comma-separated `postgres://…` URLs of streaming replicas of `DATABASE_URL`. Wallet and holdings listings, asset reads, owners and event pages read from them; writes, and reads by a principal that has just written, go to the primary; a replica that fails or lags is left out until it answers again (docs/operations/read-replicas.md). Refused without `DATABASE_URL`',
      allowed: '`postgres:` or `postgresql:` URLs',
      defaultText: 'unset (every read on the primary)',
      secret: true,
    },
  ),
  DATABASE_READ_MAX_LAG_MS: setting('readReplicas.maxLagMs', integer(1_000, 50, 600_000), {
    description:
      'with `DATABASE_READ_URLS`: a replica whose state trails the primary by more than this serves no read until it catches up',
  }),
  DATABASE_READ_POLL_MS: setting('readReplicas.pollMs', integer(200, 10, 10_000), {
    description:
      "with `DATABASE_READ_URLS`: how often the primary's WAL position and each replica's replay position are read (a writer reads from the primary for about this long after its write)",
  }),
  REDIS_URL: setting('redisUrl', url(['redis:', 'rediss:']).optional(), {
    description:
      '`redis://…`: event fan-out between instances, shared rate-limit counters, WebSocket tickets; must answer at start-up, optional afterwards (docs/operations/failures.md)',
    allowed: '`redis:` or `rediss:` URL',
    defaultText: 'unset',
    secret: true,
  }),
  REDIS_KEY_PREFIX: setting(
    'redisKeyPrefix',
    z
      .string()
      .regex(/^[A-Za-z0-9:_.-]{1,64}$/, { error: 'must be 1 to 64 letters, digits or ":_.-"' })
      .default('gats:'),
    {
      description: 'starts every Redis key and channel name, so several deployments can share one Redis',
      allowed: '1 to 64 of `A-Z a-z 0-9 : _ . -`',
    },
  ),
  SECRET_KEY: setting(
    'secretKey',
    z.string().min(32, { error: 'must be at least 32 characters' }).optional(),
    {
      description:
        'encrypts private keys at rest (custodial wallets, DID keys, token signing keys) and derives cookie keys. **Required with `DATABASE_URL`** (all instances share it)',
      defaultText: 'generated into `$DATA_DIR/secret.key` (embedded only)',
      secret: true,
    },
  ),
  SEED_DEMO: setting('seedDemo', oneOf(['auto', 'always', 'never'] as const, 'auto'), {
    description: '`auto`: seed an empty embedded database; `always`: any empty database; `never`',
  }),
  LOG_LEVEL: setting(
    'logLevel',
    oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    { description: 'pino level; JSON logs on stdout with request ids' },
  ),
  BODY_LIMIT_BYTES: setting('bodyLimitBytes', integer(100 * KIB, KIB, 10 * MIB), {
    description: 'largest JSON body (413 above)',
  }),
  REQUEST_TIMEOUT_MS: setting('requestTimeoutMs', integer(15_000, 100, 300_000), {
    description: 'a request running longer is answered 503',
  }),
  SHUTDOWN_GRACE_MS: setting('shutdownGraceMs', integer(10_000, 0, 120_000), {
    description: 'drain time on SIGTERM before remaining connections are closed',
  }),
  SHUTDOWN_TIMEOUT_SECONDS: setting('shutdownTimeoutSeconds', integer(15, 1, 600), {
    description:
      'hard limit on a shutdown (SIGTERM/SIGINT): past it the process exits with code 70 whatever is stuck',
  }),
  TRUST_PROXY: setting('trustProxy', oneOf(['true', 'false'] as const, 'false').transform(isTrue), {
    description: 'trust `X-Forwarded-*` (behind a load balancer)',
  }),
  CORS_ORIGINS: setting('corsOrigins', list().optional().transform(orEmpty), {
    description: 'comma-separated exact origins allowed by CORS',
    defaultText: 'empty',
    allowed: 'origins, comma-separated',
  }),
  ACCESS_TOKEN_TTL_SECONDS: setting('accessTokenTtlSeconds', integer(900, 60, DAY_SECONDS), {
    description: 'access token lifetime',
  }),
  REFRESH_TOKEN_TTL_SECONDS: setting(
    'refreshTokenTtlSeconds',
    integer(14 * DAY_SECONDS, 300, 90 * DAY_SECONDS),
    { description: 'refresh token lifetime' },
  ),
  RATE_LIMIT_REQUESTS: setting('rateLimit.requestsPerWindow', integer(600, 1, 1_000_000), {
    description: 'requests per API key per window',
  }),
  RATE_LIMIT_WINDOW_SECONDS: setting('rateLimit.windowSeconds', integer(60, 1, DAY_SECONDS), {
    description: 'the rate-limit window',
  }),
  LOGIN_RATE_LIMIT_REQUESTS: setting('rateLimit.loginPerWindow', integer(20, 1, 100_000), {
    description: 'per client address per window, for login and registration',
  }),
  RATE_LIMIT_USER_REQUESTS: setting('rateLimit.userRequestsPerWindow', integer(1200, 1, 1_000_000), {
    description:
      "requests per user per window, every authenticated operation, all of the user's keys and tokens together",
  }),
  RATE_LIMIT_ACCOUNT_REQUESTS: setting('rateLimit.accountRequestsPerWindow', integer(60, 1, 1_000_000), {
    description:
      'requests per user per window to manage API keys and applications (`/api/v1/api-keys`, `/api/v1/applications`)',
  }),
  MAX_API_KEYS_PER_USER: setting('quotas.apiKeysPerUser', integer(50, 1, 10_000), {
    description: 'active API keys one user may hold (one more: 409 `/problems/quota-exceeded`)',
  }),
  MAX_APPLICATIONS_PER_USER: setting('quotas.applicationsPerUser', integer(20, 1, 10_000), {
    description: 'applications one user may hold (one more: 409 `/problems/quota-exceeded`)',
  }),
  MAX_OPEN_TRADES_PER_PROPOSER: setting('trades.maxOpenPerProposer', integer(20, 1, 10_000), {
    description:
      "open trade proposals one user may have made (its service accounts' included; one more: 409 `/problems/quota-exceeded`)",
  }),
  MAX_OPEN_TRADES_PER_COUNTERPARTY: setting('trades.maxOpenPerCounterparty', integer(50, 1, 10_000), {
    description:
      'open trade proposals to one wallet, from everyone (one more: 409 `/problems/quota-exceeded`)',
  }),
  MAX_SERVICE_ACCOUNTS_PER_USER: setting('quotas.serviceAccountsPerUser', integer(10, 1, 10_000), {
    description: 'service accounts one user may own (one more: 409 `/problems/quota-exceeded`)',
  }),
  IDEMPOTENCY_TTL_SECONDS: setting('idempotencyTtlSeconds', integer(DAY_SECONDS, 60, 30 * DAY_SECONDS), {
    description: 'how long an `Idempotency-Key` is remembered',
  }),
  EVENT_RELAY_POLL_MS: setting('eventRelayPollMs', integer(500, 10, 60_000), {
    description:
      "how often each instance's relay reads the outbox when no commit was announced to it (a commit on this instance, or with `REDIS_URL` on any, announces itself at once): the delay of another instance's events while Redis is unset or down",
  }),
  EVENT_RETENTION_DAYS: setting('eventRetentionDays', integer(30, 1, 3650), {
    description: 'events older than this are pruned; resuming before them answers `resync_required` / 410',
  }),
  AUDIT_RETENTION_DAYS: setting('auditRetentionDays', integer(0, 0, 36_500), {
    description:
      'audit entries older than this are pruned, the oldest first, keeping the last pruned hash so `npm run audit:verify` still verifies; 0 keeps every entry',
  }),
  CREDENTIAL_MAX_VALIDITY_DAYS: setting('credentialMaxValidityDays', integer(365, 1, 3650), {
    description: 'longest (and default) lifetime of an issued credential; a later `validUntil` is a 422',
  }),
  VERIFY_BODY_LIMIT_BYTES: setting('verify.bodyLimitBytes', integer(32 * 1024, 1024, 1024 * 1024), {
    description: 'largest `POST /identity/verify` body (413 above)',
  }),
  VERIFY_MAX_JSON_NODES: setting('verify.maxJsonNodes', integer(2000, 50, 100_000), {
    description:
      'most JSON values (objects, arrays, scalars) a verified credential or presentation may have (413 above)',
  }),
  VERIFY_WORKERS: setting('verify.workers', integer(1, 0, 64), {
    description: 'worker threads for credential canonicalization and proof checks (0: on the main thread)',
  }),
  VERIFY_RATE_COST: setting('verify.cost', integer(10, 1, 1000), {
    description: "units of the API key's request budget one `POST /identity/verify` uses",
  }),
  READ_CACHE_ENTRIES: setting('readCache.maxEntries', integer(10_000, 0, 1_000_000), {
    description:
      'cached answers of the asset and holdings reads per instance (0: off); see docs/architecture/decisions.md, "Cached reads"',
  }),
  READ_CACHE_MB: setting('readCache.maxMegabytes', integer(64, 1, 4096), {
    description: 'memory bound of those cached answers',
  }),
  ADDRESS_CACHE_ENTRIES: setting('addressCacheEntries', integer(10_000, 100, 10_000_000), {
    description:
      'wallet addresses whose EIP-55 checksum form each instance keeps (about 200 bytes each): every answer showing a wallet formats its address, about 23 µs of CPU when it is not kept (docs/benchmarks.md, Scale)',
  }),
  ASSET_VIEW_CACHE_ENTRIES: setting('readCache.assetViews', integer(10_000, 100, 10_000_000), {
    description:
      'assets whose unchanging part (name, metadata, collection...) each instance keeps for the holdings listings, asked for with `Cache-Control: no-cache` too (about 750 bytes each; an asset is kept from its second listing); a listing of assets not kept reads and builds them (docs/benchmarks.md, Scale)',
  }),
  WS_HEARTBEAT_MS: setting('ws.heartbeatMs', integer(30_000, 100, 600_000), {
    description: 'protocol ping interval; a peer that misses one is dropped',
  }),
  WS_MAX_SUBSCRIPTIONS: setting('ws.maxSubscriptionsPerConnection', integer(20, 1, 1000), {
    description: 'subscriptions per connection',
  }),
  WS_MAX_CONNECTIONS_PER_KEY: setting('ws.maxConnectionsPerKey', integer(100, 1, 100_000), {
    description:
      "WebSocket connections per API key, across all instances when `REDIS_URL` is set (each instance's count kept in Redis, refreshed every 10 s, expiring after 30 s so a crashed instance's share ages out); per instance otherwise",
  }),
  WS_MAX_CONNECTIONS_PER_USER: setting('ws.maxConnectionsPerUser', integer(200, 1, 100_000), {
    description:
      'WebSocket connections per user over all its API keys, counted like the per-key cap (across instances with Redis); 429 at the upgrade past it',
  }),
  WS_ALLOWED_ORIGINS: setting(null, origins().optional(), {
    description:
      "comma-separated origins (`https://host[:port]`) browsers may open WebSockets from; an upgrade with another `Origin` is refused 403 (clients that send no `Origin` are not checked); the explorer's dev server (`npm run explorer:dev`) needs its own origin listed",
    defaultText: 'the origin of `PUBLIC_URL` and the `CORS_ORIGINS`',
    allowed: 'origins, comma-separated',
  }),
  WEBHOOK_ALLOW_LOOPBACK: setting(
    'webhooks.allowLoopback',
    oneOf(['true', 'false'] as const, 'false').transform(isTrue),
    {
      description:
        'development only: webhook URLs may use plain `http` on a loopback host, and deliveries may reach loopback addresses',
    },
  ),
  WEBHOOK_ALLOWED_NETWORKS: setting('webhooks.allowedNetworks', list().optional().transform(orEmpty), {
    description:
      'networks webhooks may reach although private, link-local or otherwise not public (checked at every delivery, after DNS resolution)',
    defaultText: 'empty',
    allowed: 'CIDR ranges, comma-separated (e.g. `10.1.0.0/16`)',
  }),
  WEBHOOK_TIMEOUT_MS: setting('webhooks.timeoutMs', integer(10_000, 100, 60_000), {
    description: 'a webhook endpoint must answer within this (else the attempt failed and is retried)',
  }),
  WEBHOOK_CONCURRENCY: setting('webhooks.concurrency', integer(16, 1, 1000), {
    description: 'webhook requests in flight at once per instance (one per subscription, so its order holds)',
  }),
  WEBHOOK_CONCURRENCY_PER_OWNER: setting('webhooks.concurrencyPerOwner', integer(4, 1, 1000), {
    description:
      "of those, at most this many for one user's subscriptions (its service accounts' included): one user's slow receivers never take every slot",
  }),
  WEBHOOK_RETRY_BASE_MS: setting('webhooks.retryBaseMs', integer(5_000, 10, 3_600_000), {
    description:
      'first retry delay of a failed delivery; each further retry waits twice as long (at most an hour), with full jitter',
  }),
  WEBHOOK_RETRY_WINDOW_SECONDS: setting(
    'webhooks.retryWindowSeconds',
    integer(DAY_SECONDS, 1, 30 * DAY_SECONDS),
    {
      description:
        'how long a failing delivery is retried; then it is given up and its subscription marked `failing`',
    },
  ),
  WEBHOOK_DISABLE_AFTER_SECONDS: setting(
    'webhooks.disableAfterSeconds',
    integer(3 * DAY_SECONDS, 1, 90 * DAY_SECONDS),
    {
      description: 'a subscription `failing` this long without a success is disabled (status `disabled`)',
    },
  ),
  MAX_WEBHOOKS_PER_USER: setting('webhooks.maxPerUser', integer(20, 1, 10_000), {
    description: 'webhook subscriptions one user may hold (one more: 409 `/problems/quota-exceeded`)',
  }),
  WS_MAX_REPLAY_EVENTS: setting('ws.maxReplayEvents', integer(10_000, 1, 10_000_000), {
    description:
      'deepest WebSocket replay, in event ids behind the newest; a `lastEventId` further back answers `resync_required` (`too_far_back`) pointing at `GET /api/v1/events?after=`',
  }),
  WS_MAX_REPLAYS_PER_KEY: setting('ws.maxReplaysPerKey', integer(2, 1, 1000), {
    description:
      'replays running at once per API key on an instance (and always one per connection); further resuming subscribes wait their turn',
  }),
  WS_MAX_REPLAYS_PER_USER: setting('ws.maxReplaysPerUser', integer(4, 1, 1000), {
    description: 'replays running at once per user on an instance, like the per-key count',
  }),
  WS_MAX_MESSAGE_BYTES: setting('ws.maxMessageBytes', integer(16 * KIB, 256, MIB), {
    description: 'largest client frame',
  }),
  WS_MAX_BUFFERED_BYTES: setting('ws.maxBufferedBytes', integer(MIB, 16 * KIB, 64 * MIB), {
    description: 'outgoing buffer above which a slow consumer is closed with 4008',
  }),
  CHAINS: setting(null, list().optional().transform(orEmpty), {
    description:
      'EVM chains whose registered token contracts are indexed, as `<chainId>=<JSON-RPC URL>` items (e.g. `1=https://eth.example/rpc`); a chain can also be given alone as `CHAIN_<chainId>_RPC_URL`, and its confirmations as `CHAIN_<chainId>_CONFIRMATIONS`. Each node must answer `eth_chainId` with its chain id at start-up',
    allowed: '`<chainId>=<http(s) or ws(s) URL>`, comma-separated',
  }),
  CHAIN_CONFIRMATIONS: setting(null, integer(12, 0, 10_000), {
    description:
      'blocks mined on top of a block before its on-chain transfers are confirmed and announced (per chain: `CHAIN_<chainId>_CONFIRMATIONS`); reorgs within this window are rolled back',
  }),
  CHAIN_RPC_RATE: setting('chain.rpcRate', integer(10, 1, 10_000), {
    description: 'JSON-RPC requests per second per chain the indexer sends at most',
  }),
  CHAIN_MAX_BLOCK_RANGE: setting('chain.maxBlockRange', integer(2000, 1, 1_000_000), {
    description:
      'largest block range one `eth_getLogs` asks for; halved when the node answers "range too large" or times out, doubled back after successes',
  }),
  CHAIN_MAX_BACKFILL_BLOCKS: setting('chain.maxBackfillBlocks', integer(100_000, 0, 1_000_000_000), {
    description:
      "deepest backfill a studio may register: a contract whose `fromBlock` (raised to its deployment block) is more blocks than this below the chain's head is registered by an admin only",
  }),
  CHAIN_POLL_MS: setting('chain.pollMs', integer(2000, 10, 600_000), {
    description: 'head polling interval once the indexer has caught up',
  }),
  CHAIN_RPC_TIMEOUT_MS: setting('chain.rpcTimeoutMs', integer(10_000, 100, 300_000), {
    description: 'time limit of one JSON-RPC request; a time-out pauses the chain and retries with back-off',
  }),
  CHAIN_INDEXER: setting(
    'chain.indexer',
    oneOf(['on', 'off'] as const, 'on').transform((value) => value === 'on'),
    {
      description:
        '`on`: this instance competes for the one indexer lock per deployment (PostgreSQL advisory lock; SQLite: the one process); `off`: it only serves reads',
    },
  ),
  CHAIN_METADATA: setting(
    null,
    oneOf(['on', 'off'] as const, 'on').transform((value) => value === 'on'),
    {
      description:
        "`on`: the indexer fetches a new ERC-721/ERC-1155 token's metadata (`tokenURI`/`uri`) in the background, never holding indexing up; `off`: on-chain tokens keep a placeholder image",
    },
  ),
  CHAIN_METADATA_IPFS_GATEWAY: setting(null, url(['https:', 'http:']).default('https://ipfs.io'), {
    description:
      'the HTTPS IPFS gateway `ipfs://` token URIs are read through (`<gateway>/ipfs/<cid>/<path>`)',
  }),
  CHAIN_METADATA_ALLOW_LOOPBACK: setting(null, oneOf(['true', 'false'] as const, 'false').transform(isTrue), {
    description:
      'development only: token metadata may be read over plain `http` from a loopback host (and from loopback addresses)',
  }),
  CHAIN_METADATA_ALLOWED_NETWORKS: setting(null, list().optional().transform(orEmpty), {
    description:
      'networks token metadata may be read from although private, link-local or otherwise not public (checked after DNS resolution)',
    defaultText: 'empty',
    allowed: 'CIDR ranges, comma-separated (e.g. `10.1.0.0/16`)',
  }),
  CHAIN_METADATA_TIMEOUT_MS: setting(null, integer(5000, 100, 60_000), {
    description: 'time limit of one metadata request (3 tries, 1 s and 4 s apart)',
  }),
  CHAIN_METADATA_MAX_BYTES: setting(null, integer(262_144, 1024, 10_485_760), {
    description: 'largest metadata document read; a larger one is refused',
  }),
  // The marketplace (issue 35, src/domain/ledger/market.ts): read together by `marketConfig`.
  MARKET_FEE_BPS: setting(null, integer(0, 0, 5000), {
    description:
      "the marketplace fee on each sale, in basis points of the price (rounded down to the currency's decimals), paid to `MARKET_FEE_WALLET`",
  }),
  MARKET_FEE_WALLET: setting(
    null,
    z
      .string()
      .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x address of 40 hexadecimal digits')
      .optional(),
    {
      description: "the deployment's wallet receiving marketplace fees; unset: no fee is taken",
      defaultText: 'unset',
      allowed: 'a 0x address (40 hexadecimal digits)',
    },
  ),
  MARKET_MAX_ROYALTY_BPS: setting(null, integer(1000, 0, 10_000), {
    description: "the highest royalty a collection's studio may set, in basis points of the price",
  }),
  MARKET_SWEEP_MS: setting(null, integer(5000, 100, 3_600_000), {
    description:
      'how often each instance ends the listings and offers past their expiry, settles ended auctions and expires items past their end time (each in its own operation, exactly once across instances)',
  }),
};

type Settings = typeof settings;
export type ConfigVariable = keyof Settings;

/** The variables' schema (validation, and the configuration reference's table). */
export const configSchema = z.object(
  Object.fromEntries(Object.entries(settings).map(([name, entry]) => [name, entry.schema])) as {
    [V in ConfigVariable]: Settings[V]['schema'];
  },
);

type Parsed = z.output<typeof configSchema>;

/** `{ a: { b: T } }` for the path 'a.b'. */
type Nest<P extends string, T> = P extends `${infer Head}.${infer Rest}`
  ? { [K in Head]: Nest<Rest, T> }
  : { [K in P]: T };

type Intersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void
  ? I
  : never;

/** An intersection of nested objects written as one object (readable in hovers and errors). */
type Flatten<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]: Flatten<T[K]> } : T;

/** The fields the variables fill one for one. */
type Direct = Intersection<
  {
    [V in ConfigVariable]: Settings[V]['field'] extends string
      ? Nest<Settings[V]['field'], Parsed[V]>
      : never;
  }[ConfigVariable]
>;

/** One typed configuration: the variables' fields, and the fields `derived` computes from several. */
export type Config = Flatten<Direct & ReturnType<typeof derived>>;

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
  const config: Record<string, unknown> = {};
  for (const [name, { field }] of Object.entries(settings) as [ConfigVariable, { field: string | null }][]) {
    if (field !== null) put(config, field.split('.'), parsed.data[name]);
  }
  merge(config, derived(parsed.data, env));
  return config as Config;
}

/** Sets the value at `path`, making the objects on the way. */
function put(target: Record<string, unknown>, path: string[], value: unknown): void {
  const [head, ...rest] = path;
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  target[head] ??= {};
  put(target[head] as Record<string, unknown>, rest, value);
}

/** Adds `source`'s fields to `target`, into the objects both have. */
function merge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isPlainObject(existing) && isPlainObject(value)) merge(existing, value);
    else target[key] = value;
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The fields that depend on several variables (or on variables named per chain). */
function derived(e: Parsed, env: Env) {
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, '');
  if (e.DATABASE_READ_URLS.length > 0 && e.DATABASE_URL === undefined)
    throw new ConfigError(
      'DATABASE_READ_URLS is set without DATABASE_URL: read replicas are PostgreSQL streaming replicas; the embedded SQLite database has none',
    );
  if (e.MANAGEMENT_HOST !== undefined && e.MANAGEMENT_PORT === undefined)
    throw new ConfigError(
      'MANAGEMENT_HOST is set without MANAGEMENT_PORT: set MANAGEMENT_PORT too, or neither',
    );
  const metadata: ChainMetadataSettings | undefined = e.CHAIN_METADATA
    ? {
        ipfsGateway: e.CHAIN_METADATA_IPFS_GATEWAY.replace(/\/$/, ''),
        allowLoopback: e.CHAIN_METADATA_ALLOW_LOOPBACK,
        allowedNetworks: e.CHAIN_METADATA_ALLOWED_NETWORKS,
        timeoutMs: e.CHAIN_METADATA_TIMEOUT_MS,
        maxBytes: e.CHAIN_METADATA_MAX_BYTES,
      }
    : undefined;
  return {
    /** Public base URL: absolute links, the OAuth issuer and the did:web identity derive from it. */
    publicUrl,
    /**
     * The management listener (MANAGEMENT_PORT): `/healthz`, `/readyz` and `/metrics` on their own
     * address and port, and no longer on the public port. Unset: they are served on the public port.
     * `host` unset: the public listener's interface.
     */
    management:
      e.MANAGEMENT_PORT === undefined ? undefined : { port: e.MANAGEMENT_PORT, host: e.MANAGEMENT_HOST },
    sqlitePath: path.resolve(e.SQLITE_PATH ?? path.join(e.DATA_DIR, 'gats.sqlite')),
    ws: {
      /** Origins a browser may open a WebSocket from (exact `scheme://host[:port]`); no Origin header: not checked. */
      allowedOrigins: e.WS_ALLOWED_ORIGINS ?? [
        ...new Set([publicUrl, ...e.CORS_ORIGINS].flatMap((origin) => URL.parse(origin)?.origin ?? [])),
      ],
    },
    chain: { chains: chainEndpoints(e.CHAINS, env, e.CHAIN_CONFIRMATIONS), metadata },
    /** The marketplace's fee and royalty cap (issue 35). */
    market: marketConfig(e),
  };
}

export interface MarketConfig {
  /** Basis points of each sale's price to `feeWallet` (0 when no wallet is set). */
  feeBps: number;
  /** Lowercase address, or null: no fee. */
  feeWallet: string | null;
  maxRoyaltyBps: number;
  /** How often the market keeper (src/domain/ledger/market-keeper.ts) sweeps, in ms. */
  sweepMs: number;
}

/** The marketplace's settings: the fee only with a wallet to pay it to. */
function marketConfig(e: Parsed): MarketConfig {
  const feeWallet = e.MARKET_FEE_WALLET?.toLowerCase() ?? null;
  return {
    feeBps: feeWallet ? e.MARKET_FEE_BPS : 0,
    feeWallet,
    maxRoyaltyBps: e.MARKET_MAX_ROYALTY_BPS,
    sweepMs: e.MARKET_SWEEP_MS,
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

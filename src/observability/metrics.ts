import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type Metric,
  type MetricValue,
  Registry,
} from 'prom-client';

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface RequestSeries {
  labels: { method: string; operation: string; status: string };
  /** Observations per bucket (not cumulative), the last one past the largest bound. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * The two per-request metrics, kept as plain numbers per (method, operation, status) and turned into
 * Prometheus series only when scraped: prom-client's own Histogram and Counter validate and hash
 * their labels on every observation, a measurable share of a cached read. The exposition is the
 * same (`http_request_duration_seconds` histogram, `http_requests_total` counter).
 */
export class HttpRequestMetrics {
  private readonly series = new Map<string, RequestSeries>();

  constructor(registry: Registry) {
    registry.registerMetric(
      this.metric('http_request_duration_seconds', 'HTTP request duration by operation', 'histogram', () =>
        this.durationValues(),
      ),
    );
    registry.registerMetric(
      this.metric('http_requests_total', 'HTTP requests by operation and status', 'counter', () =>
        [...this.series.values()].map((series) => ({ labels: { ...series.labels }, value: series.count })),
      ),
    );
  }

  observe(method: string, operation: string, status: number, seconds: number): void {
    const key = `${method} ${operation} ${status}`;
    let series = this.series.get(key);
    if (!series) {
      series = {
        labels: { method, operation, status: String(status) },
        buckets: new Float64Array(DURATION_BUCKETS.length + 1),
        sum: 0,
        count: 0,
      };
      this.series.set(key, series);
    }
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]) bucket++;
    series.buckets[bucket]++;
    series.sum += seconds;
    series.count++;
  }

  private durationValues(): MetricValue<string>[] {
    const values: MetricValue<string>[] = [];
    for (const series of this.series.values()) {
      let cumulative = 0;
      DURATION_BUCKETS.forEach((bound, index) => {
        cumulative += series.buckets[index];
        values.push({
          metricName: 'http_request_duration_seconds_bucket',
          labels: { ...series.labels, le: bound },
          value: cumulative,
        } as MetricValue<string>);
      });
      values.push({
        metricName: 'http_request_duration_seconds_bucket',
        labels: { ...series.labels, le: '+Inf' },
        value: series.count,
      } as MetricValue<string>);
      values.push({
        metricName: 'http_request_duration_seconds_sum',
        labels: { ...series.labels },
        value: series.sum,
      } as MetricValue<string>);
      values.push({
        metricName: 'http_request_duration_seconds_count',
        labels: { ...series.labels },
        value: series.count,
      } as MetricValue<string>);
    }
    return values;
  }

  /** A metric as the registry reads it (what prom-client's own classes give it). */
  private metric(
    name: string,
    help: string,
    type: 'histogram' | 'counter',
    values: () => MetricValue<string>[],
  ) {
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => this.series.clear(),
    } as unknown as Metric;
  }
}

/** The Prometheus registry of one app instance (tests build several apps in one process). */
export interface Metrics {
  registry: Registry;
  /** http_request_duration_seconds (histogram) and http_requests_total (counter). */
  httpRequests: HttpRequestMetrics;
  wsConnections: Gauge;
  eventsPublished: Counter<'type'>;
  /** The outbox relay (src/events/tail.ts): how far behind the commits it hands events over. */
  relay: RelayMetrics;
  /** Uses of a per-instance fallback because Redis was away, by what fell back. */
  redisFallbacks: Counter<'use'>;
  webhooks: WebhookMetrics;
}

/** The outbox relay of this instance (src/events/tail.ts). */
export interface RelayMetrics {
  /** events_relay_lag_seconds: from an event's write (occurredAt) to its hand-off to the listeners. */
  lagSeconds: Histogram;
  /** Records a successful read of the outbox: events_relay_read_age_seconds counts from it. */
  read(): void;
}

/** Webhook delivery (src/webhooks/dispatcher.ts). */
export interface WebhookMetrics {
  /** webhook_attempts_total: attempts by outcome (`succeeded`, `failed`: retried later, `given_up`). */
  attempts: Counter<'outcome'>;
  /** webhook_attempt_duration_seconds: from the request's start to its answer (or failure). */
  attemptSeconds: Histogram<'outcome'>;
  /** webhook_delivery_lag_seconds: from the event's commit (occurredAt) to the 2xx that delivered it. */
  lagSeconds: Histogram;
  /**
   * webhook_delivery_stage_seconds{stage}: where a fast-path delivery's time goes, stage by stage:
   * `relay` (commit to the dispatcher's copy of the event; `catch_up` instead when it was read back
   * from the outbox), `queue` (waiting for its turn: the subscription's earlier requests, a claim),
   * `handoff` (to the sender thread), `request` (the HTTP round trip, signing included), `return`
   * (the answer back to the dispatcher).
   */
  stageSeconds: Histogram<'stage'>;
}

const WEBHOOK_STAGE_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5];

const WEBHOOK_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];

function createWebhookMetrics(registry: Registry): WebhookMetrics {
  const registers = [registry];
  return {
    attempts: new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (succeeded; failed: retried later; given_up: retries exhausted)',
      labelNames: ['outcome'],
      registers,
    }),
    attemptSeconds: new Histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Webhook attempt duration, from the request to the answer or the failure, by outcome',
      labelNames: ['outcome'],
      buckets: WEBHOOK_SECONDS_BUCKETS,
      registers,
    }),
    lagSeconds: new Histogram({
      name: 'webhook_delivery_lag_seconds',
      help: "Time from an event's commit to the successful delivery of its webhook",
      buckets: WEBHOOK_SECONDS_BUCKETS,
      registers,
    }),
    stageSeconds: new Histogram({
      name: 'webhook_delivery_stage_seconds',
      help: "A delivery's time by stage: relay (or catch_up), queue, handoff, request, return",
      labelNames: ['stage'],
      buckets: WEBHOOK_STAGE_BUCKETS,
      registers,
    }),
  };
}

/** What the webhook backlog gauges read when scraped (one query). */
export interface WebhookBacklog {
  /** Deliveries waiting for an attempt or a retry. */
  pending: number;
  /** Deliveries given up. */
  failed: number;
  /** Outbox events past enabled subscriptions' cursors (not yet turned into deliveries), summed. */
  undelivered: number;
  /** Subscriptions by status (active, failing, disabled). */
  subscriptions: Record<string, number>;
}

/** How long a scrape waits for a gauge read from the database before it shows the last value read. */
const SCRAPE_READ_MS = 1000;

/**
 * webhook_backlog{state} and webhook_subscriptions{status}, read from the database when scraped. A
 * read that fails or takes over SCRAPE_READ_MS leaves the gauges at their last value: /metrics must
 * answer while the database is away, which is when operators look at it (it answered 503 before).
 */
export function watchWebhookBacklog(metrics: Metrics, read: () => Promise<WebhookBacklog>): void {
  const registers = [metrics.registry];
  let known: WebhookBacklog | null = null;
  let last: Promise<WebhookBacklog | null> | null = null;
  // Both gauges are collected in one scrape: one read for both.
  const current = () => {
    last ??= new Promise<WebhookBacklog | null>((resolve) => {
      const timer = setTimeout(() => resolve(known), SCRAPE_READ_MS);
      read()
        .then(
          (backlog) => {
            known = backlog;
            resolve(backlog);
          },
          () => resolve(known),
        )
        .finally(() => clearTimeout(timer));
    }).finally(() => setTimeout(() => (last = null), 100).unref());
    return last;
  };
  new Gauge({
    name: 'webhook_backlog',
    help: 'Webhook work outstanding by state (pending: deliveries awaiting an attempt or retry; failed: given up; undelivered: events past enabled subscriptions cursors)',
    labelNames: ['state'],
    registers,
    async collect() {
      const backlog = await current();
      if (!backlog) return;
      this.set({ state: 'pending' }, backlog.pending);
      this.set({ state: 'failed' }, backlog.failed);
      this.set({ state: 'undelivered' }, backlog.undelivered);
    },
  });
  new Gauge({
    name: 'webhook_subscriptions',
    help: 'Webhook subscriptions by status (active, failing, disabled)',
    labelNames: ['status'],
    registers,
    async collect() {
      const backlog = await current();
      if (!backlog) return;
      for (const status of ['active', 'failing', 'disabled'])
        this.set({ status }, backlog.subscriptions[status] ?? 0);
    },
  });
}

/** What the dependency gauges read when scraped. */
export interface DependencyProbes {
  /** The PostgreSQL pool (null on SQLite). */
  pool(): {
    max: number;
    total: number;
    idle: number;
    waiting: number;
    acquireTimeouts: number;
    lostInUse: number;
  } | null;
  /** Whether Redis is usable now (absent without REDIS_URL). */
  redisUsable?: () => boolean;
}

/**
 * Pool exhaustion and Redis degradation as Prometheus series (issue 14.1, 14.2): read from the
 * pool and the Redis link when scraped.
 */
export function watchDependencies(metrics: Metrics, probes: DependencyProbes): void {
  const registers = [metrics.registry];
  const gauge = (name: string, help: string, read: () => number | null, labelNames: string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        const value = read();
        if (value !== null) this.set(value);
      },
    });
  if (probes.pool() !== null) {
    const stat =
      <K extends keyof NonNullable<ReturnType<DependencyProbes['pool']>>>(key: K) =>
      () =>
        probes.pool()?.[key] ?? null;
    gauge('db_pool_max_connections', 'Largest number of pooled PostgreSQL connections', stat('max'));
    new Gauge({
      name: 'db_pool_connections',
      help: 'Pooled PostgreSQL connections by state (idle, in_use)',
      labelNames: ['state'],
      registers,
      collect() {
        const pool = probes.pool();
        if (!pool) return;
        this.set({ state: 'idle' }, pool.idle);
        this.set({ state: 'in_use' }, pool.total - pool.idle);
      },
    });
    gauge('db_pool_waiting_requests', 'Requests waiting for a free pooled connection', stat('waiting'));
    gauge(
      'db_pool_acquire_timeouts_total',
      'Waits for a pooled connection that ran out of time (pool exhausted or database away)',
      stat('acquireTimeouts'),
    );
    gauge(
      'db_connections_lost_total',
      'Pooled connections that broke while in use and were removed from the pool',
      stat('lostInUse'),
    );
  }
  const { redisUsable } = probes;
  if (redisUsable)
    gauge('redis_up', '1 when Redis is usable, 0 while it is away (per-instance fallbacks in use)', () =>
      redisUsable() ? 1 : 0,
    );
}

/** What read replicas report (src/db/replicas.ts `status()`), read when scraped. */
interface ReplicaProbe {
  name: string;
  up: boolean;
  lagSeconds: number | null;
  serving: boolean;
}

/**
 * Read replicas (DATABASE_READ_URLS): each one's lag and state, and reads by target. Returns the
 * counter the routing increments (`primary` or a replica's name).
 */
export function watchReplicas(metrics: Metrics, probe: () => readonly ReplicaProbe[]): Counter<'target'> {
  const registers = [metrics.registry];
  new Gauge({
    name: 'db_replica_lag_seconds',
    help: "Seconds a read replica's state trails the primary (measured at each poll, so at least up to one poll interval; absent until it first answers)",
    labelNames: ['replica'],
    registers,
    collect() {
      this.reset();
      for (const replica of probe())
        if (replica.lagSeconds !== null) this.set({ replica: replica.name }, replica.lagSeconds);
    },
  });
  new Gauge({
    name: 'db_replica_serving',
    help: '1 while a read replica serves reads (it answers and is within DATABASE_READ_MAX_LAG_MS), 0 while it is left out',
    labelNames: ['replica'],
    registers,
    collect() {
      for (const replica of probe()) this.set({ replica: replica.name }, replica.serving ? 1 : 0);
    },
  });
  return new Counter({
    name: 'db_routed_reads_total',
    help: 'Routed reads (listings, asset reads, owners, event pages: one per statement or page) by where they ran: primary, or a replica by name',
    labelNames: ['target'],
    registers,
  });
}

/** What the chain indexers report (src/chain/indexer.ts `status()`), as metrics read when scraped. */
export interface ChainProbe {
  chainId: number;
  state: string;
  head: bigint | null;
  indexedBlock: bigint | null;
  lag: bigint | null;
  rpcErrors: number;
  dataErrors: number;
  reorgs: number;
  backfilling: number;
  suspended: readonly unknown[];
}

/**
 * Per configured EVM chain: head, indexed block, lag, RPC and data errors, reorgs, whether indexing
 * is paused, contracts backfilling and suspended (which ones, and why: /readyz).
 */
export function watchChains(metrics: Metrics, chains: () => ChainProbe[]): void {
  const registers = [metrics.registry];
  const perChain = (name: string, help: string, read: (chain: ChainProbe) => number | bigint | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['chain_id'],
      registers,
      collect() {
        this.reset();
        for (const chain of chains()) {
          const value = read(chain);
          if (value !== null) this.set({ chain_id: String(chain.chainId) }, Number(value));
        }
      },
    });
  perChain('chain_head_block', "The chain node's latest block, as the indexer last read it", (c) => c.head);
  perChain(
    'chain_indexed_block',
    'Every block up to this one is indexed for every registered contract',
    (c) => c.indexedBlock,
  );
  perChain('chain_lag_blocks', 'Blocks between the head and the indexed block', (c) => c.lag);
  perChain('chain_indexer_paused', '1 while the indexer is paused by node errors or time-outs', (c) =>
    c.state === 'paused' ? 1 : 0,
  );
  perChain('chain_indexer_active', '1 on the instance holding the chain indexer lease', (c) =>
    c.state === 'standby' || c.state === 'stopped' ? 0 : 1,
  );
  perChain(
    'chain_rpc_errors_total',
    'Indexer steps failed by the node (errors, time-outs) since start',
    (c) => c.rpcErrors,
  );
  perChain('chain_reorgs_total', 'Reorgs rolled back since start', (c) => c.reorgs);
  perChain(
    'chain_data_errors_total',
    'Indexer steps failed by a data error no single contract could be blamed for, since start',
    (c) => c.dataErrors,
  );
  perChain(
    'chain_contracts_suspended',
    'Registered contracts not indexed: suspended by a data error of their own or by an admin (/readyz says which and why)',
    (c) => c.suspended.length,
  );
  perChain(
    'chain_contracts_backfilling',
    'Active contracts more than one block range behind the head, backfilling beside the head-following ones',
    (c) => c.backfilling,
  );
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new HttpRequestMetrics(registry),
    wsConnections: new Gauge({
      name: 'ws_connections',
      help: 'Open WebSocket connections',
      registers: [registry],
    }),
    eventsPublished: new Counter({
      name: 'events_published_total',
      help: 'Events published by the outbox relay',
      labelNames: ['type'],
      registers: [registry],
    }),
    relay: createRelayMetrics(registry),
    redisFallbacks: new Counter({
      name: 'redis_fallbacks_total',
      help: 'Uses of a per-instance fallback because Redis was away, by what fell back',
      labelNames: ['use'],
      registers: [registry],
    }),
    webhooks: createWebhookMetrics(registry),
  };
}

function createRelayMetrics(registry: Registry): RelayMetrics {
  let readAt = Date.now();
  new Gauge({
    name: 'events_relay_read_age_seconds',
    help: 'Seconds since the outbox relay last read the outbox (it reads at least every poll interval; grows while it cannot)',
    registers: [registry],
    collect() {
      this.set((Date.now() - readAt) / 1000);
    },
  });
  return {
    lagSeconds: new Histogram({
      name: 'events_relay_lag_seconds',
      help: "Time from an event's write (occurredAt) to its hand-off to this instance's WebSocket and webhook listeners",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    read() {
      readAt = Date.now();
    },
  };
}

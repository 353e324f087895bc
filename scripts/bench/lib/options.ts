// What the dispatcher (run.ts) passes to every benchmark.
import type { DbKind } from '../../lib/database.ts';
import type { WsClientKind } from '../../lib/ws-clients.ts';

export interface BenchOptions {
  /** The databases to run on, one after the other. */
  dbs: DbKind[];
  /** Seconds each measured load runs (warm-ups come on top). */
  durationSeconds: number;
  /** HTTP connections (reads, auth; transfers always uses 50 clients). */
  connections: number;
  /** Fan-out cases: clients and events per second. */
  fanout: { clients: number; rate: number }[];
  /** WebSocket connections held open by the memory benchmark. */
  idleClients: number;
  /**
   * The WebSocket client of the fan-out and memory load generators: `lean` (lib/lean-ws.ts, the
   * default) or `ws` (the client library, several times the load generator's CPU per message).
   */
  wsClient: WsClientKind;
  /**
   * The reads benchmark's parts: one hot wallet (`hot`), 300 wallets under writes (`spread`), both, or
   * the hot reads on a primary alone against a primary and a streaming replica (`replicas`, PostgreSQL).
   */
  reads: ReadsMode;
  /**
   * Rounds of the reads benchmark (hello, then each target, then hello again) and of the scale
   * benchmark (each load on the reference ledger, then on the grown one): their ratios are the
   * medians of the rounds.
   */
  rounds: number;
  /** The scale benchmark's loads: those whose label holds this text (`--loads no-cache`; all when absent). */
  loads?: string;
  /** The scale benchmark's stages: wallet totals, smallest first (`--stages 1000,100000`). */
  stages: number[];
  /**
   * The scale benchmark's last stage: the event log grown in bulk to this many events (0: none;
   * `--bulk-events 10000000`).
   */
  bulkEvents: number;
  /**
   * The scale benchmark, PostgreSQL: the last stage measured again after `VACUUM (ANALYZE)`, as a
   * server with autovacuum keeps its tables (`--vacuum`; the targets are judged before it).
   */
  vacuum: boolean;
  /**
   * The scale benchmark, PostgreSQL: run on a server of its own with this `shared_buffers` (`--pg-shared-buffers
   * 2GB`; otherwise the machine's server, or BENCH_POSTGRES_URL's).
   */
  pgSharedBuffers?: string;
  /**
   * The scale benchmark, PostgreSQL: run on a server of its own with pg_stat_statements, printing the
   * statements of each load's first round (`--pg-statements`; not recorded).
   */
  pgStatements: boolean;
  /**
   * The scale benchmark, PostgreSQL: ids per partition of the event log from the start
   * (`--outbox-partition-ids 10000000`: the `sequence_counter` row `outbox-partition-ids`; the
   * migration's first two partitions keep 1,000,000 each).
   */
  outboxPartitionIds?: number;
  /**
   * The scale benchmark: both services keep this many assets' fixed views and addresses' checksum
   * forms (ASSET_VIEW_CACHE_ENTRIES, ADDRESS_CACHE_ENTRIES; `--asset-views 1000000`), and each stage lists every wallet twice before its loads, so that the
   * listing caches hold all that fits (a view is kept at its asset's second listing).
   */
  assetViews?: number;
}

export type ReadsMode = 'hot' | 'spread' | 'both' | 'replicas';

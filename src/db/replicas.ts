// Reads from PostgreSQL streaming replicas (`DATABASE_READ_URLS`, issue 34 item 6), writes on the
// primary, read-your-writes kept. How it decides (docs/operations/read-replicas.md):
//
// - Every poll (`DATABASE_READ_POLL_MS`) it takes a sample of the primary: the relay's position (read
//   first), then `pg_current_wal_insert_lsn()`; then each replica's `pg_last_wal_replay_lsn()`. A
//   sample taken at time t has an LSN at or past every commit before t, so a replica whose replay
//   LSN is at or past it holds everything committed before t: its "state time" is the newest such t,
//   its lag `now - state time`, and its event bound the relay position of that sample (every event id
//   at or below it was final on the primary at t: committed, or never will be).
// - A read goes to a replica (round robin among those up and within `DATABASE_READ_MAX_LAG_MS`)
//   unless the principal reading (user, service account; the audit origin of the request) committed a
//   change at a time the replica's state does not reach yet: then to the primary. Nothing is asked of
//   the database at commit; the writer reads from the primary for one poll and the replication
//   delay. A commit on another instance is known here by its notice (./replica-notices.ts, Redis):
//   noted at the notice's arrival, after the commit.
// - A replica whose poll or read fails is out until a poll succeeds again, at most every second;
//   a read that failed on it runs again on the primary (the caller sees no error).
// - Event pages (after an id, up to the relay's position): a replica answers only with the rows the
//   primary would: a full page at or below its event bound, or any page when its bound reaches the
//   requested one; otherwise the primary reads the page.
// - The read cache keeps an answer read from a replica only when the replica's state time is past
//   the cache's last invalidation (src/http/read-cache.ts: `observe`).
// SQLite has no replicas: the setting is refused at start-up (src/config/index.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Database } from './database.ts';
import type { PinnedReadPool } from './dialect.ts';
import { type PgPool, pgReadStatements, type ReadStatements } from './read-statements.ts';
import type { CommitNotices } from './replica-notices.ts';

interface ReplicaSettings {
  /** `postgres://…` URLs of streaming replicas of the primary (`DATABASE_READ_URLS`). */
  urls: readonly string[];
  /** A replica further behind than this serves no read (`DATABASE_READ_MAX_LAG_MS`). */
  maxLagMs: number;
  /** How often the primary and the replicas are polled (`DATABASE_READ_POLL_MS`). */
  pollMs: number;
}

/** How long a replica that failed stays out at least. */
const RETRY_MS = 1_000;
/** A poll statement that has not answered in this time fails (the replica is taken out). */
const POLL_TIMEOUT_MS = 2_000;

/** A PostgreSQL LSN (`16/B374D848`) as a number of bytes. */
function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** The pool of a replica: `pg`'s Pool, as the ORM's pool is (the driver's class, no types of its own). */
interface ReplicaPool {
  /** The named statements' calls (PgPool). */
  query: PgPool['query'];
  /** A connection for several statements in a row (pinned reads: ./dialect.ts, `runPinnedRead`). */
  connect: PinnedReadPool['connect'];
  on(event: 'error', listener: (error: Error) => void): void;
  end(): Promise<void>;
}

interface Sample {
  /** performance.now() when the primary was asked. */
  at: number;
  lsn: bigint;
  /** The relay's position, read before the primary was asked. */
  position: number;
}

interface ReplicaStatus {
  /** `replica-1`, … in the order of DATABASE_READ_URLS (the URL itself holds credentials). */
  name: string;
  up: boolean;
  /** Seconds its state trails the primary (at least the poll interval's share); null: unknown. */
  lagSeconds: number | null;
  /** Whether it serves reads now (up and within the lag bound). */
  serving: boolean;
}

/** What the reads of one `observe` scope used: its first target serves them all (one state per answer). */
interface Observed {
  stateAt: number;
  target?: Replica | 'primary';
}

interface Replica {
  name: string;
  pool: ReplicaPool;
  statements: ReadStatements;
  up: boolean;
  retryAt: number;
  replayLsn: bigint | null;
  /** The `at` of the newest sample its replay LSN reaches (-Infinity: none kept). */
  stateAt: number;
  /** The relay position of that sample: every event id at or below it is on the replica. */
  position: number;
}

/** Who reads or writes now (e.g. `user:<id>`), or undefined (no principal: anyone's reads). */
type PrincipalOf = () => string | undefined;

interface ReplicaHooks {
  principal: PrincipalOf;
  /** Counts a read by target (`primary` or a replica's name). */
  counted?: (target: string) => void;
  /** A replica failed (a poll or a read). */
  failed?: (name: string, error: unknown) => void;
  /** The other instances' commits, and where this instance's are told (several instances). */
  notices?: CommitNotices;
}

export class ReadReplicas {
  /** The primary's read statements (the database handle's). */
  private readonly primary: ReadStatements;
  private readonly settings: ReplicaSettings;
  private readonly hooks: ReplicaHooks;
  private readonly replicas: Replica[];
  private samples: Sample[] = [];
  /** Principal -> performance.now() of its last commit known here (kept for the lag window). */
  private readonly writes = new Map<string, number>();
  private relayPosition: () => number = () => 0;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private turn = 0;
  private closed = false;
  /** The oldest replica state a read of the current async context used (`observe`). */
  private readonly observed = new AsyncLocalStorage<Observed>();

  private constructor(
    primary: ReadStatements,
    settings: ReplicaSettings,
    hooks: ReplicaHooks,
    pools: ReplicaPool[],
  ) {
    this.primary = primary;
    this.settings = settings;
    this.hooks = hooks;
    this.replicas = pools.map((pool, index) => ({
      name: `replica-${index + 1}`,
      pool,
      statements: pgReadStatements(async () => pool, primary.date),
      up: false,
      retryAt: 0,
      replayLsn: null,
      stateAt: Number.NEGATIVE_INFINITY,
      position: 0,
    }));
    hooks.notices?.onNotice((principals) => {
      const now = performance.now();
      for (const principal of principals) this.writes.set(principal, now);
    });
  }

  /**
   * A pool per replica URL, of the same class and options as the ORM's (type parsers, timeouts), and
   * a first poll. Replicas that do not answer now are out until they do: start-up does not wait.
   */
  static async open(
    { orm, reads }: Database,
    settings: ReplicaSettings,
    hooks: ReplicaHooks,
  ): Promise<ReadReplicas> {
    const primaryPool = (await orm.em.getConnection().getNativeClient()) as {
      constructor: new (options: unknown) => ReplicaPool;
      options: Record<string, unknown>;
    };
    const pools = settings.urls.map((url) => {
      const pool = new primaryPool.constructor({
        ...primaryPool.options,
        // Not enumerable on the pool's options: used when the URL names no password.
        password: primaryPool.options.password,
        connectionString: url,
      });
      // An idle connection that breaks (the replica stopped) must not crash the process.
      pool.on('error', () => {});
      return pool;
    });
    const replicas = new ReadReplicas(reads, settings, hooks, pools);
    await replicas.poll();
    replicas.schedule();
    return replicas;
  }

  /** The relay's position (src/events/tail.ts `lastId`), sampled with the primary's LSN. */
  followRelay(position: () => number): void {
    this.relayPosition = position;
  }

  /**
   * The principal of the current context committed a change (call right after the COMMIT, before
   * the writer is answered): noted here, and told to the other instances.
   */
  committed(): void {
    const principal = this.hooks.principal();
    if (principal === undefined) return;
    this.writes.set(principal, performance.now());
    this.hooks.notices?.publish([principal]);
  }

  /** The read statements every routed read goes through: a replica's when one may answer, else the primary's. */
  statements(): ReadStatements {
    const primary = this.primary;
    return {
      all: (sql, parameters) => this.read(primary, (statements) => statements.all(sql, parameters)),
      arrays: (sql, parameters) => this.read(primary, (statements) => statements.arrays(sql, parameters)),
      date: primary.date,
      json: primary.json,
      close() {},
    };
  }

  /**
   * An event page (`read` on a replica's pool or the primary's, with the highest id it may keep):
   * the replica's rows when they are what the primary would answer (see the top of the file).
   */
  async eventPage<T>(
    after: number,
    limit: number,
    upTo: number,
    read: (pool: ReplicaPool | null, bound: number) => Promise<T[]>,
  ): Promise<T[]> {
    const replica = this.pick(undefined, (candidate) => candidate.position > after);
    if (replica) {
      const bound = Math.min(upTo, replica.position);
      try {
        const rows = await read(replica.pool, bound);
        if (rows.length === limit || bound >= upTo) {
          this.hooks.counted?.(replica.name);
          return rows;
        }
      } catch (error) {
        this.fail(replica, error);
      }
    }
    this.hooks.counted?.('primary');
    return read(null, upTo);
  }

  /**
   * Runs `work` and says how old the oldest replica state it read was (performance.now() time;
   * Infinity when it read only from the primary): the read cache keeps an answer only when newer
   * than its last invalidation.
   */
  async observe<T>(work: () => Promise<T>): Promise<{ value: T; stateAt: number }> {
    const seen: Observed = { stateAt: Number.POSITIVE_INFINITY };
    const value = await this.observed.run(seen, work);
    return { value, stateAt: seen.stateAt };
  }

  status(): ReplicaStatus[] {
    const now = performance.now();
    return this.replicas.map((replica) => ({
      name: replica.name,
      up: replica.up,
      lagSeconds: this.lagOf(replica, now),
      serving: this.serving(replica, now),
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.polling;
    await Promise.all(this.replicas.map((replica) => replica.pool.end().catch(() => {})));
    await this.hooks.notices?.close();
  }

  private async read<T>(
    primary: ReadStatements,
    work: (statements: ReadStatements) => Promise<T>,
  ): Promise<T> {
    const seen = this.observed.getStore();
    let replica: Replica | undefined;
    if (seen?.target !== undefined) {
      // The answer's earlier statements' target (its state) while it serves; else the primary (newer).
      if (seen.target !== 'primary' && seen.target.up) replica = seen.target;
    } else {
      const principal = this.hooks.principal();
      replica = this.pick(principal === undefined ? undefined : this.writes.get(principal));
    }
    if (replica) {
      try {
        if (seen) {
          seen.target = replica;
          seen.stateAt = Math.min(seen.stateAt, replica.stateAt);
        }
        const result = await work(replica.statements);
        this.hooks.counted?.(replica.name);
        return result;
      } catch (error) {
        this.fail(replica, error);
      }
    }
    if (seen) seen.target = 'primary';
    this.hooks.counted?.('primary');
    return work(primary);
  }

  /** A replica serving now whose state is newer than `wroteAt` (and meets `also`), in turn. */
  private pick(wroteAt: number | undefined, also?: (replica: Replica) => boolean): Replica | undefined {
    const count = this.replicas.length;
    const now = performance.now();
    for (let step = 0; step < count; step++) {
      const replica = this.replicas[(this.turn + step) % count];
      if (!this.serving(replica, now)) continue;
      if (wroteAt !== undefined && replica.stateAt <= wroteAt) continue;
      if (also && !also(replica)) continue;
      this.turn = (this.turn + step + 1) % count;
      return replica;
    }
    return undefined;
  }

  private serving(replica: Replica, now: number): boolean {
    return replica.up && now - replica.stateAt <= this.settings.maxLagMs;
  }

  private lagOf(replica: Replica, now: number): number | null {
    if (replica.replayLsn === null) return null;
    const since = Number.isFinite(replica.stateAt) ? replica.stateAt : this.samples[0]?.at;
    return since === undefined ? null : Math.max(0, now - since) / 1000;
  }

  private fail(replica: Replica, error: unknown): void {
    if (replica.up) this.hooks.failed?.(replica.name, error);
    replica.up = false;
    replica.retryAt = performance.now() + RETRY_MS;
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll().finally(() => this.schedule());
    }, this.settings.pollMs);
    this.timer.unref();
  }

  /** One sample of the primary, then every replica's replay position. */
  private async poll(): Promise<void> {
    const position = this.relayPosition();
    const at = performance.now();
    try {
      const [row] = await this.primary.all('select pg_current_wal_insert_lsn()::text as lsn', []);
      this.samples.push({ at, lsn: parseLsn(String(row.lsn)), position });
    } catch {
      // The primary is away: no new sample (replicas' lag grows; reads fail over to the primary's errors).
    }
    // Kept: what a replica within the lag bound can reach, and the newest sample.
    const keepFrom = performance.now() - this.settings.maxLagMs - 2 * this.settings.pollMs;
    while (this.samples.length > 1 && this.samples[0].at < keepFrom) this.samples.shift();
    for (const [principal, wroteAt] of this.writes) if (wroteAt < keepFrom) this.writes.delete(principal);
    await Promise.all(this.replicas.map((replica) => this.pollReplica(replica)));
  }

  private async pollReplica(replica: Replica): Promise<void> {
    if (!replica.up && performance.now() < replica.retryAt) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('replica poll unanswered')), POLL_TIMEOUT_MS);
      });
      const [row] = await Promise.race([
        replica.statements.all('select pg_last_wal_replay_lsn()::text as lsn', []),
        timeout,
      ]);
      // Null: not a replica (or not replaying). Such a server cannot say what it holds: not used.
      if (row?.lsn === null || row?.lsn === undefined) throw new Error('not a streaming replica');
      const lsn = parseLsn(String(row.lsn));
      replica.replayLsn = lsn;
      for (let index = this.samples.length - 1; index >= 0; index--) {
        const sample = this.samples[index];
        if (sample.lsn <= lsn) {
          replica.stateAt = sample.at;
          replica.position = sample.position;
          break;
        }
      }
      replica.up = true;
    } catch (error) {
      this.fail(replica, error);
    } finally {
      clearTimeout(timer);
    }
  }
}

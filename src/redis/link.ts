// Redis is optional at run time (DESIGN.md §9: dependencies degrade, they do not fail). Every Redis
// client of the service is made here with the same short time-outs and no offline queue, so a
// command to a Redis that is away fails in milliseconds instead of waiting (up to 10 s before) and
// each user falls back to its per-instance form: rate limits and login throttles count in memory,
// WebSocket tickets are kept in memory, connection caps count this instance's connections, commit
// announcements are left to the relay's poll. The link says whether Redis is usable, for those
// fallbacks, `/readyz` and `/metrics`; recovery is automatic when the clients reconnect.
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../observability/logger.ts';

/** A command unanswered this long fails (and the caller falls back). */
export const REDIS_COMMAND_TIMEOUT_MS = 500;
/** After a failed command, how long Redis is left alone before it is tried again. */
const BACKOFF_MS = 1_000;

/** Client options shared by every Redis connection of the service. */
export function redisClientOptions(): RedisOptions {
  return {
    enableOfflineQueue: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    // Reconnect quickly and forever: Redis coming back must be noticed within a second or so.
    retryStrategy: (times) => Math.min(100 * times, 1_000),
  };
}

export interface RedisLink {
  /** The configured key prefix (REDIS_KEY_PREFIX): every key and channel name starts with it. */
  readonly prefix: string;
  /** A new client (connected by `ready()`), watched by this link. */
  client(purpose: string): Redis;
  /** Resolves when every client is connected; rejects after `timeoutMs` (start-up). */
  ready(timeoutMs: number): Promise<void>;
  /** Whether Redis may be used now: every client connected and no recent failure. */
  usable(): boolean;
  /**
   * Whether Redis answers now (readiness): `usable()` and a PING answered within the command
   * time-out; a Redis that keeps connections open but stops answering is caught here even while
   * no other command has run, and counts as a failure.
   */
  answers(): Promise<boolean>;
  /** Records a failed command: callers fall back for a moment without trying Redis. */
  failed(error: unknown, purpose: string): void;
  /** Called with the new state whenever usability changes. */
  onChange(listener: (usable: boolean) => void): void;
  close(): Promise<void>;
}

export function createRedisLink(url: string, prefix: string, logger: Logger): RedisLink {
  const clients = new Map<Redis, string>();
  const listeners: ((usable: boolean) => void)[] = [];
  let failedAt = 0;
  let reported = true;
  let closed = false;
  // Until `ready()` has seen every client connect, Redis is not "unavailable", it is starting: no
  // report then (32.5: each start logged "redis unavailable" then "available again", the clients
  // being created unconnected and connected only by `ready()`).
  let started = false;

  const connected = () => [...clients.keys()].every((client) => client.status === 'ready');
  const report = () => {
    const now = connected() && Date.now() - failedAt >= BACKOFF_MS;
    if (now === reported || closed || !started) return;
    reported = now;
    if (now) logger.info('redis available again: shared counters, tickets and announcements resume');
    else
      logger.warn(
        'redis unavailable: rate limits, login throttles, WebSocket caps and tickets are per instance until it returns',
      );
    for (const listener of listeners) listener(now);
  };
  // The backoff ends without any event: look again now and then.
  const watcher = setInterval(report, 250);
  watcher.unref();

  const link: RedisLink = {
    prefix,
    client(purpose) {
      const client = new Redis(url, { ...redisClientOptions(), lazyConnect: true });
      clients.set(client, purpose);
      let lastError = 0;
      client.on('error', (error) => {
        // Reconnection attempts fail every second while Redis is away: log the first of a run.
        if (Date.now() - lastError > 30_000) logger.warn({ err: error, purpose }, 'redis connection error');
        lastError = Date.now();
      });
      for (const event of ['ready', 'close', 'end']) client.on(event, report);
      return client;
    },
    async ready(timeoutMs) {
      // Each client keeps retrying (retryStrategy) until the deadline: one failed attempt (a slow
      // first answer on a loaded machine) does not end start-up; only the deadline does.
      let timer: NodeJS.Timeout | undefined;
      let lastError = '';
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`did not answer within ${timeoutMs} ms${lastError ? `: ${lastError}` : ''}`)),
          timeoutMs,
        );
      });
      const readyOne = (client: Redis) =>
        new Promise<void>((resolve) => {
          if (client.status === 'ready') return resolve();
          client.once('ready', () => resolve());
          if (client.status === 'wait')
            client.connect().catch((error: unknown) => {
              lastError = error instanceof Error ? error.message : String(error);
            });
        });
      try {
        await Promise.race([Promise.all([...clients.keys()].map(readyOne)), timeout]);
      } finally {
        clearTimeout(timer);
      }
      started = true;
      report(); // changes since are reported from here on
    },
    usable() {
      return connected() && Date.now() - failedAt >= BACKOFF_MS;
    },
    async answers() {
      if (!link.usable()) return false;
      const [client, purpose] = [...clients].find(([, name]) => !name.includes('(subscriber)')) ?? [];
      if (!client) return true;
      try {
        await client.ping();
        return true;
      } catch (error) {
        link.failed(error, `${purpose} (readiness)`);
        return false;
      }
    },
    failed(error, purpose) {
      failedAt = Date.now();
      if (reported) logger.warn({ err: error, purpose }, 'redis command failed: falling back for now');
      report();
    },
    onChange(listener) {
      listeners.push(listener);
    },
    async close() {
      closed = true;
      clearInterval(watcher);
      for (const client of clients.keys()) client.disconnect();
    },
  };
  return link;
}

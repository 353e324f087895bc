// The caps on WebSocket connections per API key and per user (WS_MAX_CONNECTIONS_PER_KEY,
// WS_MAX_CONNECTIONS_PER_USER): every count goes through here, keyed `key:<id>` or `user:<id>`.
// One instance: a count in memory. Several (REDIS_URL): the caps hold across all of them, through Redis.
//
// In Redis, each instance keeps one counter per counted key, `gats:ws-conns:{key}:<instance>`, always
// set to that instance's own count (it is the only writer of its counter, over one connection, so
// the last value it sent is its count), and the set `gats:ws-conns:{key}` names the instances that
// have one. A counter expires unless refreshed: every instance rewrites its counters every
// `refreshMs`, so the connections of an instance that crashed stop counting `ttlSeconds` later.
// A handshake is admitted by a script that sums the other instances' live counters and this
// instance's count including the new connection, atomically with setting this instance's counter.
// If Redis cannot be reached (src/redis/link.ts), an instance falls back to the cap on its own
// connections (a limit, not a security boundary: refusing every connection while Redis is down
// would be worse).
import { randomUUID } from 'node:crypto';
import type { RedisLink } from '../redis/link.ts';

export interface ConnectionLimiter {
  /** Reserves a connection for `key`; false when the key already has `max`. */
  acquire(key: string, max: number): Promise<boolean>;
  /** Gives back a reservation (the connection closed, or its handshake did not complete). */
  release(key: string): void;
  close(): Promise<void>;
}

/** Connections per key in this process (the reservations made and not given back). */
class LocalCounts {
  private readonly counts = new Map<string, number>();
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  add(key: string, delta: number): number {
    const count = this.get(key) + delta;
    if (count <= 0) this.counts.delete(key);
    else this.counts.set(key, count);
    return Math.max(count, 0);
  }
  entries(): IterableIterator<[string, number]> {
    return this.counts.entries();
  }
}

export function localConnectionLimiter(): ConnectionLimiter {
  const counts = new LocalCounts();
  return {
    async acquire(key, max) {
      if (counts.get(key) >= max) return false;
      counts.add(key, 1);
      return true;
    },
    release(key) {
      counts.add(key, -1);
    },
    async close() {},
  };
}

/**
 * KEYS[1]: the key's set of instances. ARGV: counter prefix, this instance, the cap, the counter's
 * lifetime in seconds, this instance's count with the new connection. 1 admitted, 0 refused.
 */
const ACQUIRE = `
local others = 0
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if instance ~= ARGV[2] then
    local count = redis.call('GET', ARGV[1] .. instance)
    if count then others = others + tonumber(count) else redis.call('SREM', KEYS[1], instance) end
  end
end
if others + tonumber(ARGV[5]) > tonumber(ARGV[3]) then return 0 end
redis.call('SET', ARGV[1] .. ARGV[2], ARGV[5], 'EX', ARGV[4])
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
`;

export interface RedisLimiterOptions {
  /** How often this instance rewrites its counters (default 10 s). */
  refreshMs?: number;
  /** How long a counter lives without a rewrite (default 30 s): a crashed instance's share ages out. */
  ttlSeconds?: number;
}

export function redisConnectionLimiter(
  link: RedisLink,
  options: RedisLimiterOptions = {},
): ConnectionLimiter {
  const refreshMs = options.refreshMs ?? 10_000;
  const ttlSeconds = options.ttlSeconds ?? 30;
  const instance = randomUUID();
  const redis = link.client('websocket connection caps');
  const counts = new LocalCounts();
  const members = (key: string) => `${link.prefix}ws-conns:{${key}}`;
  const prefix = (key: string) => `${members(key)}:`;

  /** Sends this instance's current count for `key` (every write of it goes through here or ACQUIRE). */
  const store = (key: string) => {
    if (!link.usable()) return Promise.resolve();
    const count = counts.get(key);
    const pipeline = redis.pipeline();
    if (count === 0) pipeline.del(prefix(key) + instance);
    else {
      pipeline.set(prefix(key) + instance, count, 'EX', ttlSeconds);
      pipeline.sadd(members(key), instance);
      pipeline.expire(members(key), ttlSeconds);
    }
    return pipeline.exec().catch((error: unknown) => link.failed(error, 'websocket connection caps'));
  };

  let closed = false;
  const refresher = setInterval(() => {
    for (const [key] of counts.entries()) void store(key);
  }, refreshMs);
  refresher.unref();

  return {
    async acquire(key, max) {
      const count = counts.add(key, 1);
      if (!link.usable()) {
        if (count <= max) return true;
        counts.add(key, -1);
        return false;
      }
      try {
        const admitted = await redis.eval(
          ACQUIRE,
          1,
          members(key),
          prefix(key),
          instance,
          max,
          ttlSeconds,
          count,
        );
        if (admitted === 1) return true;
      } catch (error) {
        link.failed(error, 'websocket connection caps');
        if (counts.get(key) <= max) return true;
      }
      counts.add(key, -1);
      void store(key);
      return false;
    },
    release(key) {
      counts.add(key, -1);
      if (!closed) void store(key);
    },
    async close() {
      closed = true;
      clearInterval(refresher);
      const pipeline = redis.pipeline();
      for (const [key] of counts.entries()) pipeline.del(prefix(key) + instance);
      await pipeline.exec().catch(() => undefined);
      redis.disconnect();
    },
  };
}

// Which principals committed, told to every instance (issue 34.6), so that read-your-writes holds
// across instances: a client whose write lands on one instance and whose next read lands on another
// reads, on the second, from the primary until a replica has the write (src/db/replicas.ts).
//
// The instance that committed publishes the principals right after the COMMIT, before the writer is
// answered; every other instance notes each principal's commit at the time the notice arrives, which
// is after the commit (so a replica state newer than that time holds it), on its own clock (no clock
// is compared between machines). A read that reaches another instance before the notice does (Redis
// delivers within a fraction of a millisecond on one network, less than a client's round trip) or
// while Redis is away is routed like anyone's: within the lag bound (DATABASE_READ_MAX_LAG_MS).
import { randomUUID } from 'node:crypto';
import type { Logger } from '../observability/logger.ts';
import type { RedisLink } from '../redis/link.ts';

export interface CommitNotices {
  /** Tells the other instances that these principals committed now. */
  publish(principals: readonly string[]): void;
  /** Called with the principals another instance announced. */
  onNotice(listener: (principals: readonly string[]) => void): void;
  close(): Promise<void>;
}

/** The most principals a notice may carry: a longer one is not from this service (ignored). */
const MAX_PRINCIPALS = 1_000;

/** Parses a notice: its sender and principals, or undefined for anything else. */
function parseNotice(text: string): { from: string; principals: string[] } | undefined {
  try {
    const notice: unknown = JSON.parse(text);
    if (typeof notice !== 'object' || notice === null) return undefined;
    const { from, principals } = notice as { from?: unknown; principals?: unknown };
    if (typeof from !== 'string' || !Array.isArray(principals) || principals.length > MAX_PRINCIPALS)
      return undefined;
    if (!principals.every((principal) => typeof principal === 'string')) return undefined;
    return { from, principals };
  } catch {
    return undefined;
  }
}

/** Notices through Redis pub/sub (REDIS_URL): one channel, every instance subscribed. */
export function redisCommitNotices(link: RedisLink, logger: Logger): CommitNotices {
  const channel = `${link.prefix}replicas:committed`;
  const instance = randomUUID();
  const publisher = link.client('replica commit notices');
  const subscriber = link.client('replica commit notices (subscriber)');
  const listeners: ((principals: readonly string[]) => void)[] = [];
  subscriber.on('message', (_channel: string, text: string) => {
    const notice = parseNotice(text);
    // This instance noted its own commits already.
    if (notice === undefined || notice.from === instance) return;
    for (const listener of listeners) listener(notice.principals);
  });
  // Subscribed once connected; ioredis subscribes again after every reconnection.
  subscriber.once('ready', () => {
    subscriber
      .subscribe(channel)
      .catch((error) => logger.warn({ err: error }, 'redis subscribe failed (replica commit notices)'));
  });
  return {
    publish(principals) {
      // None while Redis is away: the other instances route by the lag bound meanwhile.
      if (principals.length === 0 || !link.usable()) return;
      publisher
        .publish(channel, JSON.stringify({ from: instance, principals }))
        .catch((error) => link.failed(error, 'replica commit notices'));
    },
    onNotice(listener) {
      listeners.push(listener);
    },
    async close() {
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}

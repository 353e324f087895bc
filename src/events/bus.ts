// Tells every instance that events were committed, so their relays read the outbox at once instead
// of at the next poll. One instance: a direct call. Several (REDIS_URL): Redis pub/sub. The message
// is only a hint; the outbox table stays the source of every event, so a lost message costs latency
// (one poll interval), never an event. While Redis is away announcements are skipped and the
// relays find new events by polling the outbox (PostgreSQL): events keep flowing, a little later.
import type { Logger } from '../observability/logger.ts';
import type { RedisLink } from '../redis/link.ts';

export interface CommitBus {
  /** Announce that this instance committed events. */
  announce(): void;
  /** Called for announcements from every instance, this one included. */
  onCommit(listener: () => void): void;
  close(): Promise<void>;
}

export function inProcessBus(): CommitBus {
  const listeners: (() => void)[] = [];
  return {
    announce() {
      for (const listener of listeners) listener();
    },
    onCommit(listener) {
      listeners.push(listener);
    },
    async close() {},
  };
}

export function redisBus(link: RedisLink, logger: Logger): CommitBus {
  const channel = `${link.prefix}outbox:committed`;
  const publisher = link.client('commit announcements');
  const subscriber = link.client('commit announcements (subscriber)');
  const listeners: (() => void)[] = [];
  subscriber.on('message', () => {
    for (const listener of listeners) listener();
  });
  // Subscribed once connected; ioredis subscribes again after every reconnection.
  subscriber.once('ready', () => {
    subscriber.subscribe(channel).catch((error) => logger.warn({ err: error }, 'redis subscribe failed'));
  });
  let pending = false;
  return {
    announce() {
      // Commits in the same tick share one message; none while Redis is away (the relays poll).
      if (pending || !link.usable()) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        publisher.publish(channel, '1').catch((error) => link.failed(error, 'commit announcements'));
      });
    },
    onCommit(listener) {
      listeners.push(listener);
    },
    async close() {
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}

// Tells every instance that events were committed, so their relays read the outbox at once instead
// of at the next poll. One instance: a direct call. Several (REDIS_URL): Redis pub/sub. The message
// is only a hint; the outbox table stays the source of every event, so a lost message costs latency
// (one poll interval), never an event.
import { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';

const CHANNEL = 'gats:outbox:committed';

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

export async function redisBus(url: string, logger: Logger): Promise<CommitBus> {
  const publisher = new Redis(url, { maxRetriesPerRequest: 2, lazyConnect: true });
  const subscriber = new Redis(url, { lazyConnect: true });
  for (const client of [publisher, subscriber]) {
    client.on('error', (error) => logger.warn({ err: error }, 'redis connection error'));
  }
  await Promise.all([publisher.connect(), subscriber.connect()]);
  const listeners: (() => void)[] = [];
  subscriber.on('message', () => {
    for (const listener of listeners) listener();
  });
  await subscriber.subscribe(CHANNEL);
  let pending = false;
  return {
    announce() {
      // Commits in the same tick share one message.
      if (pending) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        publisher.publish(CHANNEL, '1').catch((error) => logger.warn({ err: error }, 'redis publish failed'));
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

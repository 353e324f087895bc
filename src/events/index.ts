// The events module: outbox reads, the relay that follows the outbox, the commit bus between
// instances, WebSocket tickets, and retention. Who hears of a commit, and in which order, is wired in
// src/after-commit.ts.

import type { Config } from '../config/index.ts';
import type { Database } from '../db/database.ts';
import { KEEP_EVERY_MS } from '../db/outbox-partitions.ts';
import { pruneAudit } from '../domain/audit.ts';
import { deleteExpiredIdempotencyRecords } from '../domain/ledger/idempotency.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { RedisLink } from '../redis/link.ts';
import { type CommitBus, inProcessBus, redisBus } from './bus.ts';
import { idsMayCommitOutOfOrder, waitForOutboxWritersOn } from './outbox-lock.ts';
import { pgRelayConnection } from './relay-connection.ts';
import { EventStore } from './store.ts';
import { OutboxTail } from './tail.ts';
import { memoryTickets, redisTickets, type TicketStore } from './tickets.ts';

export interface EventsModule {
  store: EventStore;
  tail: OutboxTail;
  tickets: TicketStore;
  bus: CommitBus;
  close(): Promise<void>;
}

const PRUNE_EVERY_MS = 60 * 60 * 1000;

export async function createEvents(deps: {
  database: Database;
  config: Config;
  logger: Logger;
  metrics: Metrics;
  /** Redis (REDIS_URL): commit announcements between instances and shared tickets. */
  redis?: RedisLink;
}): Promise<EventsModule> {
  const { database, config, logger, metrics, redis } = deps;
  const { orm } = database;
  // PostgreSQL: the relay reads (and waits for writers) on a connection of its own, not the pool's.
  const relay = idsMayCommitOutOfOrder(orm) ? await pgRelayConnection(orm, logger) : undefined;
  const store = new EventStore(database, relay);
  const tail = new OutboxTail(store, {
    // How often it looks when no commit was announced (another instance without Redis, a lost announcement).
    pollMs: config.eventRelayPollMs,
    logger,
    metrics,
    settleGaps: relay ? (wait) => waitForOutboxWritersOn(relay, wait) : undefined,
  });
  const bus = redis ? redisBus(redis, logger) : inProcessBus();
  const tickets = redis
    ? redisTickets(redis, () => metrics.redisFallbacks.inc({ use: 'websocket tickets' }))
    : memoryTickets();
  // PostgreSQL: the outbox's partitions ahead of its ids (src/db/outbox-partitions.ts), at start-up
  // and every KEEP_EVERY_MS: a write past them would fail.
  const keepPartitions = async () => {
    const created = await store.keepPartitionsAhead().catch((error: unknown) => {
      logger.error(
        { err: error },
        'outbox partitions: creating the partitions ahead failed (retried in 5 minutes)',
      );
      return [];
    });
    if (created.length > 0) logger.info({ created }, 'outbox partitions created');
  };
  await keepPartitions();
  const keeper = setInterval(() => void keepPartitions(), KEEP_EVERY_MS);
  keeper.unref();
  await tail.start();

  const prune = async () => {
    const cutoff = new Date(Date.now() - config.eventRetentionDays * 86_400_000);
    const removed = await store.prune(cutoff).catch((error: unknown) => {
      logger.warn({ err: error }, 'event retention failed');
      return 0;
    });
    if (removed > 0) logger.info({ removed }, 'old events removed by retention');
    // The same hourly pass removes expired Idempotency-Key records (their answers; issue 34).
    const expired = await deleteExpiredIdempotencyRecords(orm).catch((error: unknown) => {
      logger.warn({ err: error }, 'removing expired idempotency records failed');
      return 0;
    });
    if (expired > 0) logger.info({ removed: expired }, 'expired idempotency records removed');
    // And audit entries past their retention (issue 37; 0 keeps them all).
    if (config.auditRetentionDays > 0) {
      const before = new Date(Date.now() - config.auditRetentionDays * 86_400_000);
      const pruned = await pruneAudit(orm, before).catch((error: unknown) => {
        logger.warn({ err: error }, 'audit retention failed');
        return 0;
      });
      if (pruned > 0) logger.info({ removed: pruned }, 'old audit entries removed by retention');
    }
  };
  const pruner = setInterval(() => void prune(), PRUNE_EVERY_MS);
  pruner.unref();

  return {
    store,
    tail,
    tickets,
    bus,
    async close() {
      clearInterval(pruner);
      clearInterval(keeper);
      tail.stop();
      await tickets.close();
      await bus.close();
      await relay?.close();
    },
  };
}

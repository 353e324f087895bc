// Reads of the outbox: pages after an id (REST catch-up, WebSocket replay), the retained range,
// and pruning past the retention window.
import type { EntityManager } from '@mikro-orm/sql';
import type { Database } from '../db/database.ts';
import { dialectOf, runPinnedRead } from '../db/dialect.ts';
import { LedgerChange, type LedgerChangeKind } from '../db/entities/LedgerChange.ts';
import { type EventType, OutboxEvent } from '../db/entities/OutboxEvent.ts';
import type { Orm } from '../db/orm.ts';
import { dropOldestOutboxPartition, keepOutboxPartitionsAhead, type Rows } from '../db/outbox-partitions.ts';
import type { ReadStatements } from '../db/read-statements.ts';
import type { ReadReplicas } from '../db/replicas.ts';
import type { PublishedEventBody } from '../domain/ledger/store/plan.ts';
import type { EventFilter, PublishedEvent } from './filter.ts';
import { DECODE, type EventRow, eventReadQuery, eventsUpTo, readEvents } from './reads.ts';
import type { RelayConnection } from './relay-connection.ts';
import { RESTORE_MARK_PREFIX, type RestoreGap, restoreGapsOf } from './restores.ts';

/** Events removed per transaction by retention (`prune`). */
const PRUNE_BATCH = 10_000;

/** The newest old event among the oldest `?` events, and how many of them are old (`prune`). */
export const PRUNE_BOUNDARY =
  'select max(id) as last, count(*) as old from ' +
  '(select id, occurred_at from outbox_event order by id limit ?) as oldest where occurred_at < ?';

/** Row of sequence_counter that remembers how far retention has deleted. */
const PRUNED_THROUGH = 'outbox-pruned-through';

/** An event as published: the contract's envelope (`Event`) of one outbox row. */
export type EventEnvelope = PublishedEventBody;

/**
 * The envelope of a row. The row's `data` is a JSON column written only by the ledger store from a
 * `NewEvent`, whose payload the type system ties to its `type` (src/domain/ledger/store/plan.ts):
 * reading it back is where that pairing is taken on trust, once, here.
 */
export function toEnvelope(row: OutboxEvent): EventEnvelope {
  return {
    id: String(row.id),
    type: row.type,
    occurredAt: row.occurredAt.toISOString(),
    data: row.data,
    // Only the events of a multi-part operation (a batch, a batch mint, a craft, a trade) carry one.
    ...(row.operationId ? { operationId: row.operationId } : {}),
  } as EventEnvelope;
}

export function toPublished(row: OutboxEvent): PublishedEvent {
  return {
    id: Number(row.id),
    type: row.type,
    assetId: row.assetId,
    collectionId: row.collectionId ?? null,
    wallets: row.wallets,
    json: JSON.stringify(toEnvelope(row)),
  };
}

/** An internal ledger change (ledger_change) as the relay reads it. */
export interface ChangeRow {
  id: number;
  kind: LedgerChangeKind;
  userId: string | null;
  wallet: string | null;
}

const CHANGES_READ = 'select id, kind, user_id, wallet from ledger_change where id > ? order by id limit ?';

const RELAY_READ =
  'select id, type, occurred_at, data, asset_id, collection_id, wallets, operation_id from outbox_event ' +
  'where id > ? order by id limit ?';
// Each aggregate stands alone: SQLite reads min() or max() of a key from the index only then
// (`select min(id), max(id)` scanned the whole table).
const OLDEST_READ = 'select min(id) as id from outbox_event';
const NEWEST_READ = 'select max(id) as id from outbox_event';
const PRUNED_THROUGH_READ = 'select value from sequence_counter where name = ?';
/** The relay's read on PostgreSQL, a named prepared statement (its plan: event-read-plans.test.ts). */
export const RELAY_READ_PG = RELAY_READ.replace('?', '$1').replace('?', '$2');
const CHANGES_READ_PG = CHANGES_READ.replace('?', '$1').replace('?', '$2');

export class EventStore {
  private readonly orm: Orm;
  private readonly reads: ReadStatements;
  private readonly relay: RelayConnection | undefined;
  private replicas: ReadReplicas | undefined;

  /** `relay`: the relay's own connection (PostgreSQL), for `next`. */
  constructor({ orm, reads }: Database, relay?: RelayConnection) {
    this.orm = orm;
    this.reads = reads;
    this.relay = relay;
  }

  /**
   * Pages (`after` with `upTo`: REST catch-up, WebSocket replay, webhook catch-up) may come from read
   * replicas (DATABASE_READ_URLS): only rows the primary would answer (../db/replicas.ts).
   */
  useReplicas(replicas: ReadReplicas): void {
    this.replicas = replicas;
  }

  /**
   * The relay's read: every event with id > `after`, ascending, at most `limit`. On PostgreSQL on the
   * relay's own connection; on SQLite a prepared statement on the read connection (../db/
   * read-statements.ts; it reads the last commit, and the relay reads after the commit hook): the
   * relay runs after every write, and an ORM query there cost a few per cent of the CPU of reads
   * served meanwhile.
   */
  async next(after: number, limit: number): Promise<OutboxEvent[]> {
    const reads = this.reads;
    const rows = this.relay
      ? await this.relay.query<EventRow>(RELAY_READ_PG, [after, limit], 'gats_relay_next')
      : ((await reads.all(RELAY_READ, [after, limit])) as unknown as EventRow[]);
    return rows.map(
      (row) =>
        ({
          id: Number(row.id),
          type: row.type,
          occurredAt: reads.date(row.occurred_at),
          data: reads.json(row.data),
          assetId: row.asset_id,
          collectionId: row.collection_id,
          wallets: reads.json(row.wallets),
          operationId: row.operation_id ?? null,
        }) as OutboxEvent,
    );
  }

  /** The relay's read of internal changes: every ledger_change row with id > `after`, ascending. */
  async changesAfter(after: number, limit: number): Promise<ChangeRow[]> {
    const rows = this.relay
      ? await this.relay.query<Record<string, unknown>>(CHANGES_READ_PG, [after, limit], 'gats_relay_changes')
      : await this.reads.all(CHANGES_READ, [after, limit]);
    return rows.map((row) => ({
      id: Number(row.id),
      kind: row.kind as LedgerChangeKind,
      userId: (row.user_id as string | null) ?? null,
      wallet: (row.wallet as string | null) ?? null,
    }));
  }

  /** The newest ledger_change id (0 when there is none). */
  async newestChange(): Promise<number> {
    const rows = await this.em().execute<{ newest: number | string | null }[]>(
      'select max(id) as newest from ledger_change',
    );
    return Number(rows[0]?.newest ?? 0);
  }

  private em(): EntityManager {
    return this.orm.em.fork() as unknown as EntityManager;
  }

  /**
   * Events with id > `after` (and <= `upTo` when given), ascending, at most `limit`, matching
   * `filter` (all when absent). Readers that hand events to clients pass the relay's position as
   * `upTo`: ids above it may still have earlier ids committing (PostgreSQL); with it, the relay's
   * newest price update at or below it as `priceUpdatesUpTo` (OutboxTail `newestPriceUpdate`), where
   * a wallet's read stops looking for price updates (./reads.ts).
   */
  async after(
    after: number,
    limit: number,
    filter?: EventFilter,
    upTo?: number,
    priceUpdatesUpTo?: number,
  ): Promise<OutboxEvent[]> {
    // Index-driven on both databases whatever the filter and the statistics: ./reads.ts.
    const replicas = this.replicas;
    if (!replicas || upTo === undefined)
      return readEvents(this.em(), after, limit, filter, upTo, priceUpdatesUpTo);
    const em = this.em();
    return replicas.eventPage(after, limit, upTo, async (pool, bound) => {
      // A replica's bound is at or below `upTo`: the newest price update at or below `upTo` still
      // bounds those at or below it.
      if (!pool) return readEvents(em, after, limit, filter, bound, priceUpdatesUpTo);
      const query = eventReadQuery(after, limit, filter, bound, priceUpdatesUpTo);
      if (!query) return [];
      // The pinned read, as on the primary (src/db/dialect.ts, `runPinnedRead`).
      const rows = await runPinnedRead<EventRow>(pool, em.getPlatform(), query);
      return eventsUpTo(rows, DECODE, bound);
    });
  }

  /**
   * The oldest retained id (null when there is no event). A prepared statement (../db/read-statements.ts),
   * like prunedThrough: every REST page and resuming subscribe runs it (through the ORM each call built
   * and prepared its statement again). On PostgreSQL it descends into the partitions in id order up to
   * the first that holds an event; the newest id is read apart (`newest`), only by those that use it: a
   * REST page paid a descent into every partition made ahead of the ids for a figure it did not show.
   */
  oldest(): Promise<number | null> {
    return this.bound(OLDEST_READ);
  }

  /** The newest committed id (null when there is no event), as `oldest` reads it. */
  newest(): Promise<number | null> {
    return this.bound(NEWEST_READ);
  }

  /** The newest event of `type` at or below `upTo` (0 when there is none): the relay's start. */
  async newestOfType(type: EventType, upTo: number): Promise<number> {
    const rows = await this.em().execute<{ id: number | string | null }[]>(
      'select max(id) as id from outbox_event where type = ? and id <= ?',
      [type, upTo],
    );
    return Number(rows[0]?.id ?? 0);
  }

  private async bound(sql: string): Promise<number | null> {
    const rows = await this.reads.all(sql, []);
    const id = rows[0]?.id;
    return id === null || id === undefined ? null : Number(id);
  }

  /**
   * The highest id removed by retention (0 when nothing was ever removed). A resume point below it
   * has lost events; ids above it that are missing were never committed (rolled-back inserts).
   */
  async prunedThrough(): Promise<number> {
    const rows = await this.reads.all(PRUNED_THROUGH_READ, [PRUNED_THROUGH]);
    return rows.length === 0 ? 0 : Number(rows[0].value);
  }

  private restores: Promise<RestoreGap[]> | undefined;

  /**
   * The id ranges restores from backups skipped (./restores.ts). Read once: a restore is marked
   * (`npm run db:restored`) before the service starts on the restored database.
   */
  restoreGaps(): Promise<RestoreGap[]> {
    this.restores ??= this.em()
      .execute<{ name: string; value: number | string }[]>(
        'select name, value from sequence_counter where name like ?',
        [`${RESTORE_MARK_PREFIX}%`],
      )
      .then(restoreGapsOf);
    this.restores.catch(() => {
      this.restores = undefined; // read again next time (the database was away)
    });
    return this.restores;
  }

  /**
   * Creates the outbox's partitions ahead of its ids (PostgreSQL; nothing on SQLite), in a
   * transaction of its own; returns their names. Run at start-up, by every retention pass and after
   * a restore moved the ids (../db/outbox-partitions.ts).
   */
  async keepPartitionsAhead(): Promise<string[]> {
    if (!dialectOf(this.orm).partitionedOutbox) return [];
    return this.em().transactional((em) => keepOutboxPartitionsAhead(rowsOf(em)));
  }

  /**
   * Removes events older than the retention window and records how far it went; returns how many.
   * On PostgreSQL first the partitions wholly past the window, oldest first, each dropped in a
   * transaction of its own (a catalog change, not a delete of its rows: ../db/outbox-partitions.ts).
   * Then, on both databases, the old events left (the partition holding the window's boundary, the
   * default partition; on SQLite the whole log), oldest first, `batch` rows of the primary key at a
   * time, each batch its own transaction: the cost is the rows removed, not the log (the boundary was
   * `max(id) where occurred_at < ?`, a scan of the whole log every hour, on SQLite on the writers'
   * connection; issue 34). Ids follow commit order and an event is stamped as it commits, so the old
   * events are a prefix of the log: a batch with any event inside the window is the last.
   */
  async prune(olderThan: Date, batch = PRUNE_BATCH): Promise<number> {
    let removed = 0;
    // A drop that failed (its lock not granted within LOCK_TIMEOUT): the rows go instead, then the error.
    let failed: unknown;
    if (dialectOf(this.orm).partitionedOutbox) {
      for (;;) {
        const dropped = await this.em()
          .transactional(async (em) => {
            const step = await dropOldestOutboxPartition(rowsOf(em), olderThan);
            if (step) await recordPrunedThrough(em, step.through);
            return step;
          })
          .catch((error: unknown) => {
            failed = error;
            return null;
          });
        if (!dropped) break;
        removed += dropped.removed;
      }
    }
    for (;;) {
      const step = await this.em().transactional(async (em) => {
        // The primary key's walk is the only plan left, whatever the statistics (src/db/dialect.ts).
        await dialectOf(em).pinInTransaction((sql, values) => em.execute(sql, values ?? []));
        const [row] = await em.execute<{ last: number | string | null; old: number | string }[]>(
          PRUNE_BOUNDARY,
          [batch, olderThan],
        );
        const last = row?.last;
        if (last === null || last === undefined) return { removed: 0, more: false };
        await recordPrunedThrough(em, Number(last));
        const deleted = await em.nativeDelete(OutboxEvent, { id: { $lte: Number(last) } });
        return { removed: deleted, more: Number(row.old) >= batch };
      });
      removed += step.removed;
      if (!step.more) break;
    }
    // Internal changes only matter to relays that are running now: keep them as long as events (a
    // few rows: wallet links publish no event).
    await this.em().nativeDelete(LedgerChange, { occurredAt: { $lt: olderThan } });
    if (failed) throw failed;
    return removed;
  }
}

/** A transaction's statements for ../db/outbox-partitions.ts. */
function rowsOf(em: EntityManager): Rows {
  return (sql, values = []) => em.execute<Record<string, unknown>[]>(sql, values);
}

/** Records that retention removed every event up to `last` (never moving the mark back). */
async function recordPrunedThrough(em: EntityManager, last: number): Promise<void> {
  await em.execute(
    `insert into sequence_counter (name, value) values (?, ?)
     on conflict (name) do update set value = excluded.value where sequence_counter.value < excluded.value`,
    [PRUNED_THROUGH, last],
  );
}

// Raw statements inside a write transaction, for the ledger's hottest writes (transfers): no query
// builder, no unit of work, and on SQLite no `prepare` per call.
//
// - SQLite: the ORM runs every query on one better-sqlite3 connection, one transaction at a time, so
//   a statement run on that connection while the caller's transaction is open is part of it. Each
//   SQL text is prepared once and reused. Dates are bound as the ORM stores them (epoch ms).
// - PostgreSQL: through the transaction's own connection (`em.execute`), which the pool hands to
//   nobody else until it commits.
import { EventType } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import type { Orm } from './orm.ts';
import { databaseKindOf } from './platform.ts';
import type { Row } from './read-statements.ts';

export interface WriteStatements {
  /** Runs `sql` (with `?` placeholders) in `em`'s transaction and returns its rows. */
  all(em: EntityManager, sql: string, parameters: readonly unknown[]): Promise<Row[]>;
  /** Runs a statement that returns no rows (insert, update) in `em`'s transaction. */
  run(em: EntityManager, sql: string, parameters: readonly unknown[]): Promise<void>;
}

/** A statement prepared once on the ORM's SQLite connection. */
export interface SqliteStatement {
  all(...parameters: unknown[]): Row[];
  get(...parameters: unknown[]): Row | undefined;
  run(...parameters: unknown[]): { changes: number };
}

/** The members of a better-sqlite3 Database used here (the package is the ORM's, untyped here). */
interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  readonly inTransaction: boolean;
}

function sqliteValue(value: unknown): unknown {
  return value instanceof Date ? value.getTime() : value;
}

const announcing = new WeakSet<Orm>();

/**
 * Tells the ORM's subscribers that a transaction committed, for writes that commit without the ORM
 * (the events module then reads the outbox at once instead of at its next poll). Commits of one turn
 * of the event loop share one announcement, right after that turn's I/O: under load a turn handles
 * many requests, and each announcement costs the relay a read of the outbox.
 */
export function announceCommit(orm: Orm): void {
  if (announcing.has(orm)) return;
  announcing.add(orm);
  setImmediate(() => {
    announcing.delete(orm);
    void orm.em.getEventManager().dispatchEvent(EventType.afterTransactionCommit, { em: orm.em as never });
  });
}

/**
 * SQLite: transactions run synchronously on the ORM's own better-sqlite3 connection, and the ones
 * asked for during one turn of the event loop commit together (group commit).
 *
 * The ORM's queries share that one connection; its transactions hold it across `await`s. Work that
 * runs in one synchronous stretch (BEGIN IMMEDIATE, statements, COMMIT, no `await` in between) cannot
 * interleave with anything else in the process: nothing else runs until it returns. So it needs
 * neither the ORM's connection mutex nor its per-call `prepare` of BEGIN/COMMIT. The one case it must
 * avoid is starting while an ORM transaction is open on the connection (it would become part of it):
 * then each piece of work queues behind that transaction through the ORM, in a transaction of its own.
 *
 * Group commit: the work queued during one turn runs right after that turn's I/O, in one transaction,
 * each piece in its own savepoint. A piece that throws rolls back to its savepoint (it changed
 * nothing) and its caller gets the error; the others commit together, and only after that COMMIT
 * does any caller get its result. A COMMIT pays for writing every page the transaction changed to
 * the WAL; transfers of one turn share most of their pages (balances, the counter, the ends of the
 * tables and indexes), so this writes a fraction of the pages, and one commit instead of many. If the
 * COMMIT itself fails, nothing of the group was applied and every caller gets the error.
 */
export interface SqliteWriter {
  /** `sql` prepared once on the ORM's connection. */
  statement(sql: string): SqliteStatement;
  /**
   * Runs `work` (synchronous: it must not await) in a transaction, committed before the promise
   * resolves; when it throws, what it wrote is rolled back and the promise rejects. Busy errors
   * (another process holding the file past busy_timeout) are retried.
   */
  transaction<T>(work: () => T): Promise<T>;
  /** Dates and booleans as the ORM stores them on SQLite. */
  value(value: unknown): unknown;
}

const SQLITE_ATTEMPTS = 5;
/** The most pieces of work one group commit takes (a transfer's work is some tens of µs). */
const MAX_GROUP = 256;

interface QueuedWork {
  work: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  attempts: number;
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

export async function sqliteWriter(orm: Orm): Promise<SqliteWriter> {
  if (databaseKindOf(orm.em.getPlatform()) !== 'sqlite') throw new Error('sqliteWriter needs SQLite');
  const database = (await orm.em.getConnection().getNativeClient()) as SqliteDatabase;
  const prepared = new Map<string, SqliteStatement>();
  const statement = (sql: string) => {
    let found = prepared.get(sql);
    if (!found) {
      found = database.prepare(sql);
      prepared.set(sql, found);
    }
    return found;
  };
  const begin = statement('begin immediate');
  const commit = statement('commit');
  const rollback = statement('rollback');
  const savepoint = statement('savepoint gats_work');
  const release = statement('release gats_work');
  const rollbackToSavepoint = statement('rollback to gats_work');

  const queue: QueuedWork[] = [];
  let scheduled = false;

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(runQueue);
  }

  function retryOrReject(items: QueuedWork[], error: unknown): void {
    for (const item of items) {
      if (isBusy(error) && ++item.attempts < SQLITE_ATTEMPTS) {
        setTimeout(
          () => {
            queue.push(item);
            schedule();
          },
          Math.random() * 5 * item.attempts,
        );
      } else {
        item.reject(error);
      }
    }
  }

  /** An ORM transaction holds the connection: each piece waits for it through the ORM (which announces). */
  function throughOrm(items: QueuedWork[]): void {
    for (const item of items) {
      orm.em
        .fork()
        .transactional(async () => item.work())
        .then(item.resolve, (error: unknown) => retryOrReject([item], error));
    }
  }

  function runQueue(): void {
    scheduled = false;
    // A bounded group keeps the event loop's pause short; the rest runs right after the next I/O.
    const items = queue.splice(0, MAX_GROUP);
    if (queue.length > 0) schedule();
    if (items.length === 0) return;
    if (database.inTransaction) {
      throughOrm(items);
      return;
    }
    try {
      begin.run();
    } catch (error) {
      retryOrReject(items, error);
      return;
    }
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      for (const item of items) {
        savepoint.run();
        try {
          outcomes.push({ ok: true, value: item.work() });
          release.run();
        } catch (error) {
          // An error that ended the whole transaction (I/O, disk full) leaves no savepoint to go back to.
          if (!database.inTransaction) throw error;
          rollbackToSavepoint.run();
          release.run();
          outcomes.push({ ok: false, value: error });
        }
      }
      commit.run();
    } catch (error) {
      if (database.inTransaction) rollback.run();
      retryOrReject(items, error);
      return;
    }
    if (outcomes.some((outcome) => outcome.ok)) announceCommit(orm);
    items.forEach((item, index) => {
      const outcome = outcomes[index];
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.value);
    });
  }

  return {
    statement,
    value: sqliteValue,
    transaction<T>(work: () => T) {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (value: unknown) => void, reject, attempts: 0 });
        schedule();
      });
    },
  };
}

/** The members of a `pg` Pool used here (pg ships no types; MikroORM hands the pool back untyped). */
interface PgPool {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: Row[] }>;
}

/**
 * PostgreSQL: one statement in its own implicit transaction (autocommit) on the ORM's `pg` pool, as a
 * named prepared statement (parsed and planned once per pooled connection). For writes that are a
 * single call of a database function: one round trip, no BEGIN/COMMIT.
 */
export interface PgStatements {
  /** Runs `sql` (with `$1`.. placeholders) and returns its rows. */
  all(name: string, sql: string, parameters: readonly unknown[]): Promise<Row[]>;
}

export function pgStatements(orm: Orm): PgStatements {
  if (databaseKindOf(orm.em.getPlatform()) !== 'postgresql') throw new Error('pgStatements needs PostgreSQL');
  const connection = orm.em.getConnection();
  let pool: PgPool | undefined;
  return {
    async all(name, sql, parameters) {
      pool ??= (await connection.getNativeClient()) as PgPool;
      return (await pool.query({ name: `gats_write_${name}`, text: sql, values: [...parameters] })).rows;
    },
  };
}

export function writeStatements(orm: Orm): WriteStatements {
  if (databaseKindOf(orm.em.getPlatform()) === 'postgresql') {
    return {
      all: (em, sql, parameters) => em.execute<Row[]>(sql, [...parameters], 'all'),
      async run(em, sql, parameters) {
        await em.execute(sql, [...parameters], 'run');
      },
    };
  }
  const connection = orm.em.getConnection();
  let database: SqliteDatabase | undefined;
  const prepared = new Map<string, ReturnType<SqliteDatabase['prepare']>>();
  async function statement(em: EntityManager, sql: string) {
    if (!em.isInTransaction()) throw new Error('write statements run inside a transaction');
    database ??= (await connection.getNativeClient()) as SqliteDatabase;
    let found = prepared.get(sql);
    if (!found) {
      found = database.prepare(sql);
      prepared.set(sql, found);
    }
    return found;
  }
  return {
    async all(em, sql, parameters) {
      return (await statement(em, sql)).all(...parameters.map(sqliteValue));
    },
    async run(em, sql, parameters) {
      (await statement(em, sql)).run(...parameters.map(sqliteValue));
    },
  };
}

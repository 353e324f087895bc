// Raw statements inside a write transaction, for the ledger's hottest writes (transfers): no query
// builder, no unit of work, and on SQLite no `prepare` per call.
//
// - SQLite: the ORM runs every query on one better-sqlite3 connection, one transaction at a time, so
//   a statement run on that connection while the caller's transaction is open is part of it. Each
//   SQL text is prepared once and reused. Dates are bound as the ORM stores them (epoch ms).
// - PostgreSQL: through the transaction's own connection (`em.execute`), which the pool hands to
//   nobody else until it commits.
import type { Orm } from './orm.ts';
import { databaseKindOf } from './platform.ts';
import type { Row } from './read-statements.ts';

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
 *
 * What the pieces of a committed group noted with `changed` (their outbox events) goes to the
 * writer's `committed` callback (the commit hook) after the COMMIT and before any caller's promise
 * resolves; a piece rolled back to its savepoint takes its notes with it.
 */
export interface SqliteWriter<C = unknown> {
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
  /** Notes a change the running piece of work wrote (only inside `transaction`'s work). */
  changed(change: C): void;
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

export async function sqliteWriter<C>(orm: Orm, committed: (changes: C[]) => void): Promise<SqliteWriter<C>> {
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
  /** The changes noted by the work running now (null outside any work). */
  let noting: C[] | null = null;

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
      const changes: C[] = [];
      orm.em
        .fork()
        .transactional(async () => {
          noting = changes;
          try {
            return item.work();
          } finally {
            noting = null;
          }
        })
        .then(
          (value) => {
            committed(changes);
            item.resolve(value);
          },
          (error: unknown) => retryOrReject([item], error),
        );
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
    const changes: C[] = [];
    try {
      for (const item of items) {
        savepoint.run();
        const mark = changes.length;
        noting = changes;
        try {
          outcomes.push({ ok: true, value: item.work() });
          release.run();
        } catch (error) {
          changes.length = mark;
          // An error that ended the whole transaction (I/O, disk full) leaves no savepoint to go back to.
          if (!database.inTransaction) throw error;
          rollbackToSavepoint.run();
          release.run();
          outcomes.push({ ok: false, value: error });
        } finally {
          noting = null;
        }
      }
      commit.run();
    } catch (error) {
      if (database.inTransaction) rollback.run();
      retryOrReject(items, error);
      return;
    }
    committed(changes);
    items.forEach((item, index) => {
      const outcome = outcomes[index];
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.value);
    });
  }

  return {
    statement,
    value: sqliteValue,
    changed(change) {
      if (!noting) throw new Error('SqliteWriter.changed is for the work of a transaction');
      noting.push(change);
    },
    transaction<T>(work: () => T) {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (value: unknown) => void, reject, attempts: 0 });
        schedule();
      });
    },
  };
}

/**
 * A counter of commits to the database made by other connections than this process's writing one:
 * on SQLite `PRAGMA data_version` on the ORM's connection, which moves when another process (an
 * admin script, a restore) commits to the file, and not for this process's own commits (they reach
 * the read cache through the commit hook, keyed). PostgreSQL has no such counter: always 0 (writes
 * that bypass every instance are not supported there).
 *
 * One per database, made by its handle (`Database.commitCounter`, ./database.ts) and shared by every
 * reader (the read cache, the holdings listings and their thread), and read at most once a millisecond: each reading is a statement that takes and drops SQLite's WAL
 * read lock (file-lock system calls, ~12 us on a busy service).
 */
export async function externalCommitCounter(orm: Orm): Promise<() => number> {
  if (databaseKindOf(orm.em.getPlatform()) !== 'sqlite') return () => 0;
  const database = (await orm.em.getConnection().getNativeClient()) as SqliteDatabase;
  const version = database.prepare('pragma data_version');
  const read = () => (version.get() as { data_version: number }).data_version;
  let count = read();
  let readAt = performance.now();
  return () => {
    const now = performance.now();
    if (now - readAt >= 1) {
      readAt = now;
      count = read();
    }
    return count;
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

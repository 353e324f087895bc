// Raw statements inside a write transaction, for the ledger's hottest writes (transfers): no query
// builder, no unit of work, and on SQLite no `prepare` per call.
//
// - SQLite: the ORM runs every query on one better-sqlite3 connection, one transaction at a time, so
//   a statement run on that connection while the caller's transaction is open is part of it. Each
//   SQL text is prepared once and reused. Dates are bound as the ORM stores them (epoch ms).
// - PostgreSQL: through the transaction's own connection (`em.execute`), which the pool hands to
//   nobody else until it commits.
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

/** The members of a better-sqlite3 Database used here (the package is the ORM's, untyped here). */
interface SqliteDatabase {
  prepare(sql: string): { all(...parameters: unknown[]): Row[]; run(...parameters: unknown[]): unknown };
}

function sqliteValue(value: unknown): unknown {
  return value instanceof Date ? value.getTime() : value;
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

// Prepared, parameterized read statements for the hottest reads (listings, asset reads, key lookups).
// MikroORM rebuilds the SQL of every query and Kysely prepares it again on every call; here a
// statement's text is fixed, prepared once per connection and reused:
//
// - SQLite: a second, read-only connection on the same file (`node:sqlite`), with one prepared
//   statement per SQL text. In WAL mode it reads the last committed state without waiting for the
//   writer, and never sees the writes of a transaction in flight on the ORM's connection (reading
//   through that connection would: SQLite has one connection and no isolation between its users).
// - PostgreSQL: a named prepared statement per SQL text on the ORM's own `pg` pool (pg prepares it
//   once per pooled connection, then only binds and executes). Outside any transaction, as before.
//
// Statements are written once with `?` placeholders, unquoted lowercase identifiers, and nothing
// that differs between the two databases except what the caller branches on.
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { type Orm, onDatabaseClose } from './orm.ts';
import { databaseKindOf } from './platform.ts';

/** A row as the driver returns it: column name to value. */
export type Row = Record<string, unknown>;

export interface ReadStatements {
  /** Runs a read-only statement (SQL with `?` placeholders) and returns every row. */
  all(sql: string, parameters: readonly unknown[]): Promise<Row[]>;
  /**
   * The same, each row as an array of its values in the order of the select list: for the hottest
   * listings (no object with a property per column to build, and to look each value up in).
   */
  arrays(sql: string, parameters: readonly unknown[]): Promise<unknown[][]>;
  /** Turns a date column's value into a Date (drivers return text or Date depending on the type). */
  date(value: unknown): Date;
  /** Turns a JSON column's value into its value (text on SQLite, parsed by the driver on PostgreSQL). */
  json(value: unknown): unknown;
  close(): void;
}

/** The members of a `pg` Pool used here (pg ships no types; MikroORM hands the pool back untyped). */
interface PgPool {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: Row[] }>;
  query(config: {
    name: string;
    text: string;
    values: unknown[];
    rowMode: 'array';
  }): Promise<{ rows: unknown[][] }>;
}

const opened = new WeakMap<Orm, ReadStatements>();

/**
 * The read statements of `orm`'s database, opened on first use (after migrations: the SQLite file
 * is then in WAL mode). `closeDatabase` closes them.
 */
export function readStatements(orm: Orm): ReadStatements {
  let statements = opened.get(orm);
  if (!statements) {
    statements = openReadStatements(orm);
    opened.set(orm, statements);
    onDatabaseClose(orm, () => closeReadStatements(orm));
  }
  return statements;
}

export function closeReadStatements(orm: Orm): void {
  opened.get(orm)?.close();
  opened.delete(orm);
}

function openReadStatements(orm: Orm): ReadStatements {
  const platform = orm.em.getPlatform();
  const date = (value: unknown) =>
    value instanceof Date ? value : (platform.parseDate(value as string) as Date);
  if (databaseKindOf(platform) === 'postgresql') {
    const connection = orm.em.getConnection();
    let pool: PgPool | undefined;
    const named = new Map<string, { name: string; text: string }>();
    const prepare = async (sql: string) => {
      pool ??= (await connection.getNativeClient()) as PgPool;
      let statement = named.get(sql);
      if (!statement) {
        let index = 0;
        statement = { name: `gats_read_${named.size + 1}`, text: sql.replace(/\?/g, () => `$${++index}`) };
        named.set(sql, statement);
      }
      return { pool, statement };
    };
    return {
      async all(sql, parameters) {
        const { pool, statement } = await prepare(sql);
        return (await pool.query({ ...statement, values: [...parameters] })).rows;
      },
      async arrays(sql, parameters) {
        const { pool, statement } = await prepare(sql);
        return (await pool.query({ ...statement, values: [...parameters], rowMode: 'array' })).rows;
      },
      date,
      json: (value) => value,
      // Named statements live and die with the pool's connections, which the ORM closes.
      close() {},
    };
  }
  return sqliteReadStatements(orm.config.get('dbName') as string);
}

/**
 * Read statements on the SQLite file at `path` through a read-only connection of their own, opened on
 * first use (for the ORM's database, and for the holdings listings' thread: holding-thread.ts).
 */
export function sqliteReadStatements(path: string): ReadStatements {
  let database: DatabaseSync | undefined;
  const prepared = new Map<string, StatementSync>();
  const preparedForArrays = new Map<string, StatementSync>();
  const open = () => (database ??= new DatabaseSync(path, { readOnly: true, timeout: 5000 }));
  const statementOf = (sql: string, arrays: boolean) => {
    const cache = arrays ? preparedForArrays : prepared;
    let statement = cache.get(sql);
    if (!statement) {
      statement = open().prepare(sql);
      statement.setReturnArrays(arrays);
      cache.set(sql, statement);
    }
    return statement;
  };
  return {
    async all(sql, parameters) {
      return statementOf(sql, false).all(...(parameters as SQLInputValue[])) as Row[];
    },
    async arrays(sql, parameters) {
      return statementOf(sql, true).all(...(parameters as SQLInputValue[])) as unknown as unknown[][];
    },
    date: (value) => (value instanceof Date ? value : new Date(value as string | number)),
    json: (value) => (value == null ? value : JSON.parse(value as string)),
    close() {
      database?.close();
      database = undefined;
      prepared.clear();
      preparedForArrays.clear();
    },
  };
}

// Prepared, parameterized read statements for the hottest reads (listings, asset reads, key lookups).
// MikroORM rebuilds the SQL of every query and Kysely prepares it again on every call; here a
// statement's text is fixed, prepared once per connection and reused:
//
// - SQLite: a second, read-only connection on the same file (better-sqlite3, the ORM's own driver), with one prepared
//   statement per SQL text. In WAL mode it reads the last committed state without waiting for the
//   writer, and never sees the writes of a transaction in flight on the ORM's connection (reading
//   through that connection would: SQLite has one connection and no isolation between its users).
// - PostgreSQL: a named prepared statement per SQL text on the ORM's own `pg` pool (pg prepares it
//   once per pooled connection, then only binds and executes). Outside any transaction, as before.
//
// Statements are written once with `?` placeholders, unquoted lowercase identifiers, and nothing
// that differs between the two databases except what the caller branches on.
import type { Orm } from './orm.ts';
import { databaseKindOf } from './platform.ts';
import { type ReadStatements, type Row, sqliteReadStatements } from './sqlite-read-statements.ts';

export type { ReadStatements, Row };

/** The members of a `pg` Pool used here (pg ships no types; MikroORM hands the pool back untyped). */
export interface PgPool {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: Row[] }>;
  query(config: {
    name: string;
    text: string;
    values: unknown[];
    rowMode: 'array';
  }): Promise<{ rows: unknown[][] }>;
}

/**
 * The read statements of `orm`'s database, made once with its handle (`openDatabase`, ./database.ts,
 * holds them as `reads` and closes them). Nothing connects here: the SQLite read connection opens at
 * the first read (after migrations: the file is then in WAL mode), the PostgreSQL pool at its first use.
 */
export function openReadStatements(orm: Orm): ReadStatements {
  const platform = orm.em.getPlatform();
  const date = (value: unknown) =>
    value instanceof Date ? value : (platform.parseDate(value as string) as Date);
  if (databaseKindOf(platform) === 'postgresql') {
    const connection = orm.em.getConnection();
    return pgReadStatements(async () => (await connection.getNativeClient()) as PgPool, date);
  }
  return sqliteReadStatements(orm.config.get('dbName') as string);
}

/**
 * Read statements on a `pg` pool (the ORM's, or a read replica's: ./replicas.ts): a named prepared
 * statement per SQL text, prepared once per pooled connection.
 */
export function pgReadStatements(
  poolOf: () => Promise<PgPool>,
  date: (value: unknown) => Date,
): ReadStatements {
  let pool: PgPool | undefined;
  const named = new Map<string, { name: string; text: string }>();
  const prepare = async (sql: string) => {
    pool ??= await poolOf();
    let statement = named.get(sql);
    if (!statement) {
      let index = 0;
      statement = { name: `gats_read_${named.size + 1}`, text: sql.replace(/\?/g, () => `$${++index}`) };
      named.set(sql, statement);
    }
    return { pool, statement };
  };
  return {
    async all<R extends object = Row>(sql: string, parameters: readonly unknown[]) {
      const { pool, statement } = await prepare(sql);
      return (await pool.query({ ...statement, values: [...parameters] })).rows as R[];
    },
    async arrays(sql, parameters) {
      const { pool, statement } = await prepare(sql);
      return (await pool.query({ ...statement, values: [...parameters], rowMode: 'array' })).rows;
    },
    date,
    json: (value) => value,
    // Named statements live and die with the pool's connections, which the pool's owner closes.
    close() {},
  };
}

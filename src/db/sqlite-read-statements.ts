// Read statements on a SQLite file through a read-only connection of their own (read-statements.ts
// describes them). Apart from read-statements.ts, so that a thread reading the file (the holdings
// listings' thread, ../domain/ledger/reads/sqlite/worker.ts) loads the driver alone, not the ORM: the
// ORM's modules took that thread about 0.6 s to load on a slow machine, and the first listing waited.
//
// The driver is better-sqlite3, the ORM's own (one copy of it: package.json pins the ORM's version),
// never node:sqlite. Two SQLite libraries in one process do not see each other's locks (POSIX locks
// belong to the process, and each library keeps its own table of who holds what): a node:sqlite
// reader's snapshot was invisible to the ORM connection's checkpoints, which copied newer pages under
// it, so a listing read on its thread while transfers committed saw parts of different commits
// (torn sums: test/integration/db/sqlite-one-library.test.ts), and its first open truncated the
// shared-memory index the ORM had mapped. One library shares one lock table across threads.
import Database from 'better-sqlite3';

/**
 * Every connection of the service to its SQLite file reads it through a memory map of up to this many
 * bytes (`PRAGMA mmap_size`; SQLite's own build limit, SQLITE_MAX_MMAP_SIZE, is this value: a larger
 * one is cut to it), not with a `pread` system call and a copy per page missing from the connection's
 * page cache. On a large file that cache misses on most pages: the WAL mode drops a connection's
 * whole cache when another connection committed, and the indexes of a ledger of a million holdings are
 * gigabytes. Measured on compact copies of the scale benchmark's ledgers of 1,045,941 holdings (3.6 GB)
 * and 5,051, the same service on both (docs/benchmarks.md, Scale): `GET /assets/{id}` kept 0.80-0.85 of
 * the small ledger's rate without the map, 0.90-1.08 with it; a currency's events 0.78-0.91 without,
 * 0.96-1.11 with; the small ledger's rates unchanged. In the benchmark itself, at 1,010,001 holdings,
 * `GET /assets/{id}` kept 0.95 with it against 0.74 without. Writes still go through the WAL file
 * with `pwrite` (the map is read-only). What it costs: mapped pages of the file count in the process's
 * resident memory (they are the kernel's page cache, shared and reclaimable, not the heap), and a disk
 * error while reading a mapped page stops the process (SIGBUS) where `pread` would have failed the one
 * request; the file must be on a local filesystem, which the WAL mode requires already.
 */
export const SQLITE_MMAP_BYTES = 2_147_418_112;

/** The setting above as the statement every SQLite connection of the service runs when it opens. */
export const SQLITE_MMAP_PRAGMA = `pragma mmap_size = ${SQLITE_MMAP_BYTES}`;

/** A row as the driver returns it: column name to value. */
export type Row = Record<string, unknown>;

export interface ReadStatements {
  /**
   * Runs a read-only statement (SQL with `?` placeholders) and returns every row. `R` names the row's
   * columns and their types as the statement selects them (a row type next to the query's SQL): the
   * rows are typed once, here, not cast column by column where they are used. Nothing is checked at
   * run time: `R` must say what the SQL returns on both databases (text or number ids, dates through
   * `date`, JSON through `json`).
   */
  all<R extends object = Row>(sql: string, parameters: readonly unknown[]): Promise<R[]>;
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

/**
 * Read statements on the SQLite file at `path` through a read-only connection of their own, opened on
 * first use (for the ORM's database, and for the SQLite reads' listings thread:
 * ../domain/ledger/reads/sqlite/thread.ts).
 */
export function sqliteReadStatements(path: string): ReadStatements {
  let database: Database.Database | undefined;
  const prepared = new Map<string, Database.Statement>();
  const preparedForArrays = new Map<string, Database.Statement>();
  const open = () => {
    if (database === undefined) {
      database = new Database(path, { readonly: true, timeout: 5000 });
      database.exec(SQLITE_MMAP_PRAGMA);
    }
    return database;
  };
  const statementOf = (sql: string, arrays: boolean) => {
    const cache = arrays ? preparedForArrays : prepared;
    let statement = cache.get(sql);
    if (!statement) {
      statement = open().prepare(sql);
      if (arrays) statement.raw(true);
      cache.set(sql, statement);
    }
    return statement;
  };
  return {
    async all<R extends object = Row>(sql: string, parameters: readonly unknown[]) {
      return statementOf(sql, false).all(...parameters) as R[];
    },
    async arrays(sql, parameters) {
      return statementOf(sql, true).all(...parameters) as unknown[][];
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

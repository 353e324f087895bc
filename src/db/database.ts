// The database handle: everything the process opened on its one database, made once by
// `openDatabase` (at start-up in src/app.ts, by each operator command, by the tests' fixtures) and
// passed to what needs it. No registry keyed by the ORM: what a service uses, it is handed.
import { type DatabaseOptions, type Orm, openOrm, type PoolStats } from './orm.ts';
import { openReadStatements, type ReadStatements } from './read-statements.ts';
import { externalCommitCounter } from './write-statements.ts';

export interface Database {
  /** The ORM (query builder, entities, transactions; src/db/orm.ts). */
  readonly orm: Orm;
  /**
   * The prepared read statements of the hottest reads (./read-statements.ts): on SQLite a read-only
   * connection of their own, opened at the first read (after migrations: the file is then in WAL
   * mode); on PostgreSQL named statements on the ORM's pool.
   */
  readonly reads: ReadStatements;
  /**
   * The counter of commits by other connections (./write-statements.ts), made at the first call and
   * shared by every reader after it (the read cache, the holdings listings and their thread).
   */
  commitCounter(): Promise<() => number>;
  /** The PostgreSQL pool's state for `/metrics`, or null on SQLite. */
  poolStats(): PoolStats | null;
  /** Runs (and awaits) `close` when `close()` closes the database, before the ORM's own connections. */
  onClose(close: () => void | Promise<void>): void;
  /** Closes what was opened on the database (the read statements, what `onClose` registered), then the ORM. */
  close(): Promise<void>;
}

/** Opens the database (connecting, not migrating): the ORM with every entity, and what rides on it. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const { orm, poolStats } = await openOrm(options);
  const reads = openReadStatements(orm);
  let closers: (() => void | Promise<void>)[] = [() => reads.close()];
  let commitCounter: Promise<() => number> | undefined;
  return {
    orm,
    reads,
    poolStats,
    commitCounter: () => (commitCounter ??= externalCommitCounter(orm)),
    onClose(close) {
      closers.push(close);
    },
    async close() {
      const closing = closers;
      closers = [];
      for (const close of closing) await close();
      await orm.close(true);
    },
  };
}

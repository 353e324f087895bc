// PostgreSQL's pinned reads (src/db/dialect.ts, `runPinnedRead`: event pages and filters, transfer
// histories) prepare their statement once per pooled connection and run it with a generic plan. On a
// pool of one connection: the second read of a shape does not prepare it again (a second PREPARE of
// the name would fail), a connection's statements are let go when it holds too many without
// touching `pg`'s own named statements on it (./read-statements.ts: prepared once, then only bound),
// and a failed read takes its connection away, so the next read prepares on a new one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { type PinnedReadPool, runPinnedRead } from '../../../src/db/dialect.ts';
import { type PgPool, pgReadStatements } from '../../../src/db/read-statements.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';

type OnePool = PinnedReadPool &
  PgPool & {
    end(): Promise<void>;
    totalCount: number;
    query(text: string): Promise<{ rows: unknown[] }>;
    on(event: 'error', listener: () => void): void;
  };

describe.runIf(DB_KINDS.includes('postgres'))('pinned reads on PostgreSQL', () => {
  let db: ScratchDatabase;
  let opened: Database;
  let pool: OnePool;
  const platform = () => opened.orm.em.getPlatform();
  /** The pinned statements prepared on the pool's one connection. */
  const preparedNames = async () =>
    (
      await runPinnedRead<{ name: string }>(pool, platform(), {
        sql: "select name from pg_prepared_statements where name like 'gats_pinned_%' order by name",
        params: [],
      })
    ).map((row) => row.name);

  beforeAll(async () => {
    db = await migratedDatabase('postgres');
    opened = await openDatabase(db);
    const ormPool = (await opened.orm.em.getConnection().getNativeClient()) as {
      constructor: new (options: unknown) => OnePool;
      options: Record<string, unknown>;
    };
    pool = new ormPool.constructor({ ...ormPool.options, max: 1 });
    // As the service's own extra pools do (src/db/replicas.ts): the connection a failed read gives up
    // is still closing when afterAll drops the database, whose termination of it reaches the pool as
    // an 'error' event; unheard, it was an uncaught exception (a CI-style run on a slow machine).
    pool.on('error', () => {});
  });

  afterAll(async () => {
    await pool?.end();
    await opened?.close();
    await db?.drop();
  });

  it('prepares a shape once per connection and runs it with a generic plan', async () => {
    const read = {
      sql: 'select id from outbox_event where asset_id = ? and id > ? order by id limit ?',
      params: [],
    };
    for (const [asset, after] of [
      ['gold', 0],
      ['gems', 10],
      ['gold', 5],
    ])
      expect(await runPinnedRead(pool, platform(), { ...read, params: [asset, after, 20] })).toEqual([]);
    // One statement for the shape (and the one reading the names), on the one connection.
    expect(await preparedNames()).toHaveLength(2);
    const [row] = await runPinnedRead<{ 'QUERY PLAN': [{ Plan: unknown }] }>(
      pool,
      platform(),
      { ...read, params: ['gold', 0, 20] },
      'explain (format json) ',
    );
    // The generic plan: the values are parameters in its conditions.
    expect(JSON.stringify(row['QUERY PLAN'][0].Plan)).toMatch(/asset_id[^"]*= \$1/);
  });

  it("lets a connection's statements go past 200 shapes, and pg's own named statements keep working", async () => {
    const named = pgReadStatements(
      async () => pool,
      (value) => value as Date,
    );
    expect(await named.all('select ? :: int + 1 as n', [41])).toEqual([{ n: 42 }]);
    for (let shape = 0; shape < 210; shape++)
      expect(
        await runPinnedRead(pool, platform(), { sql: `select ? :: int + ${shape} as n`, params: [1] }),
      ).toEqual([{ n: 1 + shape }]);
    expect((await preparedNames()).length).toBeLessThanOrEqual(200);
    expect(pool.totalCount).toBe(1);
    // Bound again without a PREPARE: it survived the pinned statements' DEALLOCATE.
    expect(await named.all('select ? :: int + 1 as n', [1])).toEqual([{ n: 2 }]);
  });

  it('takes a connection away after a failed read, and prepares again on the next', async () => {
    const read = { sql: 'select 1 / ? :: int as n', params: [1] };
    expect(await runPinnedRead(pool, platform(), read)).toEqual([{ n: 1 }]);
    const [{ pid: before }] = (await pool.query('select pg_backend_pid() as pid')).rows as { pid: number }[];
    await expect(runPinnedRead(pool, platform(), { ...read, params: [0] })).rejects.toThrow(
      /division by zero/,
    );
    const [{ pid: after }] = (await pool.query('select pg_backend_pid() as pid')).rows as { pid: number }[];
    expect(after).not.toBe(before);
    expect(await runPinnedRead(pool, platform(), read)).toEqual([{ n: 1 }]);
  });
});

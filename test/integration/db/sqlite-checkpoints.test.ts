// The service checkpoints SQLite on a thread of its own (src/db/sqlite-checkpoints.ts): its ORM
// connection's automatic checkpoints are off (they held the event loop for a checkpoint's copy and
// syncs inside the commit that crossed the threshold), and the WAL still stays bounded: the thread
// starts it again past 10,000 pages (40 MB), as the automatic checkpoints did. Without the thread the
// WAL would hold everything committed since start-up.
import { existsSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Orm, SQLITE_AUTOCHECKPOINT_PAGES } from '../../../src/db/orm.ts';
import { checkpointOnThread } from '../../../src/db/sqlite-checkpoints.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';

const MB = 1 << 20;
/** One commit of 256 rows of 4,000 random bytes: about 1 MB of pages. */
const INSERT_1MB =
  'with recursive n(i) as (select 1 union all select i + 1 from n where i < 256) ' +
  'insert into checkpoint_probe (payload) select randomblob(4000) from n';

describe('SQLite checkpoints on their own thread', () => {
  let t: TestApp;
  let file: string;
  let closed = false;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
    file = t.app.orm.config.get('dbName') as string;
  });
  afterAll(async () => {
    if (!closed) await t?.close();
  });

  const connection = () => t.app.orm.em.getConnection();

  it('turns the automatic checkpoints of the connection that commits off', async () => {
    const [row] = await connection().execute<{ wal_autocheckpoint: number }[]>('pragma wal_autocheckpoint');
    expect(row.wal_autocheckpoint).toBe(0);
  });

  it('keeps the WAL bounded (it starts again past 40 MB) while 100 MB is committed', async () => {
    await connection().execute('create table checkpoint_probe (id integer primary key, payload blob)');
    let largest = 0;
    // 100 commits of 1 MB, a little apart, as a busy service's commits are.
    for (let commit = 0; commit < 100; commit++) {
      await connection().execute(INSERT_1MB);
      largest = Math.max(largest, statSync(`${file}-wal`).size);
      await sleep(10);
    }
    await connection().execute('drop table checkpoint_probe');
    expect(largest).toBeGreaterThan(MB); // the commits went through the WAL
    // Without the thread's RESTART the WAL held all 100 MB (a transaction always began during a copy).
    expect(largest).toBeLessThan(80 * MB);
  });

  it('never holds commits up behind a reader that stays on the WAL (a backup, say)', async () => {
    await connection().execute('create table checkpoint_probe (id integer primary key, payload blob)');
    // A read transaction left open, as a backup's (VACUUM INTO) is for its whole copy.
    const reader = new Database(file, { readonly: true });
    reader.exec('begin');
    reader.prepare('select count(*) from asset').get();
    let slowest = 0;
    try {
      // Past 10,000 pages of WAL: the thread tries a RESTART at each tick, which the reader refuses.
      for (let commit = 0; commit < 60; commit++) {
        const started = performance.now();
        await connection().execute(INSERT_1MB);
        slowest = Math.max(slowest, performance.now() - started);
        await sleep(10);
      }
    } finally {
      reader.exec('commit');
      reader.close();
    }
    await connection().execute('drop table checkpoint_probe');
    // A RESTART that waited for the reader held the writer lock for its busy timeout (5 s).
    expect(slowest).toBeLessThan(2_000);
  });

  it('puts the automatic checkpoints back, and says so once each, when checkpoints fail and the thread ends', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = createLogger('warn', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const stop = await checkpointOnThread(
      t.app.orm as Orm,
      logger,
      new URL('../../helpers/failing-checkpoint-worker.ts', import.meta.url),
    );
    try {
      await expect
        .poll(async () => (await connection().execute('pragma wal_autocheckpoint'))[0].wal_autocheckpoint)
        .toBe(SQLITE_AUTOCHECKPOINT_PAGES);
      await expect.poll(() => lines.length).toBe(2);
      // The failures' messages and the thread's end come by different channels: in either order.
      expect(lines.map((line) => line.msg).sort()).toEqual([
        'SQLite checkpoint failed on the checkpoint thread (it keeps trying)',
        'SQLite checkpoint thread stopped: automatic checkpoints are back',
      ]);
    } finally {
      await stop();
      // The service's own thread runs on: back to how the service leaves the connection.
      await connection().execute('pragma wal_autocheckpoint = 0');
    }
  });

  it('stops with the database, which then checkpoints what is left and removes the WAL', async () => {
    closed = true;
    await t.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
  });
});

// The service checkpoints SQLite on a thread of its own (src/db/sqlite-checkpoints.ts): its ORM
// connection's automatic checkpoints are off (they held the event loop for a checkpoint's copy and
// syncs inside the commit that crossed the threshold), and the WAL still stays bounded: the thread
// starts it again past 10,000 pages (40 MB), as the automatic checkpoints did. Without the thread the
// WAL would hold everything committed since start-up.
import { existsSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';

const MB = 1 << 20;

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

  it('keeps the WAL near 40 MB while 100 MB is committed', async () => {
    await connection().execute('create table checkpoint_probe (id integer primary key, payload blob)');
    let largest = 0;
    // 100 commits of 1 MB, a little apart, as a busy service's commits are.
    for (let commit = 0; commit < 100; commit++) {
      await connection().execute(
        'with recursive n(i) as (select 1 union all select i + 1 from n where i < 256) ' +
          'insert into checkpoint_probe (payload) select randomblob(4000) from n',
      );
      largest = Math.max(largest, statSync(`${file}-wal`).size);
      await sleep(10);
    }
    await connection().execute('drop table checkpoint_probe');
    expect(largest).toBeGreaterThan(MB); // the commits went through the WAL
    expect(largest).toBeLessThan(60 * MB);
  });

  it('stops with the database, which then checkpoints what is left and removes the WAL', async () => {
    closed = true;
    await t.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
  });
});

// One SQLite library in the service's process: better-sqlite3, the ORM's. A second library (the
// service's reads used node:sqlite) does not see the first one's locks, as POSIX locks belong to the
// process and each library keeps its own table of which connection holds what: a read on the
// listings' thread then ran while the ORM connection's checkpoints copied newer pages under its
// snapshot, and saw parts of different commits (here, before the fix: 105 of some 150 reads saw a
// wrong sum).

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { REPO_ROOT } from '../../helpers/service.ts';

const ACCOUNTS = 5_000;
const START = 1_000;

describe('one SQLite library in the process', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gats-one-library-'));
  let db: Database | undefined;
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("resolves the project's better-sqlite3 to the ORM's copy", () => {
    const resolvedFrom = (file: string) =>
      createRequire(path.join(REPO_ROOT, file)).resolve('better-sqlite3');
    expect(resolvedFrom('node_modules/@mikro-orm/sqlite/package.json')).toBe(resolvedFrom('package.json'));
  });

  it('gives a read on another thread each commit whole while the writer checkpoints', async () => {
    const file = path.join(dir, 'gats.sqlite');
    db = await openDatabase({ sqlitePath: file });
    const native = (await db.orm.em.getConnection().getNativeClient()) as {
      exec(sql: string): void;
      prepare(sql: string): { run(...parameters: unknown[]): unknown };
      transaction<A extends unknown[]>(work: (...args: A) => void): (...args: A) => void;
    };
    native.exec('create table probe_balance (id integer primary key, balance integer not null, pad blob)');
    const insert = native.prepare('insert into probe_balance (balance, pad) values (?, randomblob(300))');
    native.transaction(() => {
      for (let i = 0; i < ACCOUNTS; i++) insert.run(START);
    })();
    // Checkpoints after nearly every commit: each copies pages a reader's snapshot may still need.
    native.exec('pragma wal_autocheckpoint = 20');
    const move = native.prepare('update probe_balance set balance = balance + ? where id = ?');
    const transfer = native.transaction((from: number, to: number) => {
      move.run(-1, from);
      move.run(1, to);
    });
    const reader = new Worker(new URL('../../helpers/snapshot-reader.ts', import.meta.url), {
      workerData: { path: file, ms: 2_000, total: ACCOUNTS * START },
    });
    const report = new Promise<{ count: number; torn: number }>((resolve, reject) => {
      reader.on('message', (message) => {
        if (message !== 'reading') resolve(message);
      });
      reader.on('error', reject);
    });
    let done = false;
    let transfers = 0;
    void report.finally(() => {
      done = true;
    });
    const account = () => 1 + Math.floor(Math.random() * ACCOUNTS);
    while (!done) {
      for (let i = 0; i < 20; i++) transfer(account(), account());
      transfers += 20;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const { count, torn } = await report;
    expect(transfers).toBeGreaterThan(1_000);
    expect(count).toBeGreaterThan(20);
    expect({ torn }).toEqual({ torn: 0 });
  });
});

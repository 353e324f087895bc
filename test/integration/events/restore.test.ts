// Issue 32.4: event ids after a restore to an older backup. Clients hold ids of events published
// after the backup was taken; the restored database used to give those ids out again. Restored with
// the steps of docs/operations/backups-and-restore.md (a real backup: db:backup on SQLite, pg_dump / pg_restore on PostgreSQL, then
// `npm run db:restored`), the next event id is past every id published before, and a client resuming
// from an undone id is told to resync (WebSocket `resync_required`, REST 410), while one resuming
// from an id the backup holds is resumed. The shipped client (`npm run watch`) goes on after a resync.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../scripts/lib/children.ts';
import { openDatabase } from '../../../src/db/database.ts';
import { DEFAULT_POSTGRES_SERVER_URL } from '../../../src/db/scratch-database.ts';
import { DB_KINDS, startTestApp, TEST_SECRET_KEY, type TestApp } from '../../helpers/app.ts';
import { runScript } from '../../helpers/commands.ts';
import { demoSession } from '../../helpers/demo-session.ts';
import { REPO_ROOT, startService } from '../../helpers/service.ts';
import { connect } from '../../helpers/ws.ts';

const ADMIN_URL = process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_SERVER_URL;

const session = demoSession;

async function sendGold(t: TestApp, from: { headers: Record<string, string>; wallet: string }, to: string) {
  const sent = await t.http('POST', '/api/v1/transfer', {
    body: { assetId: 'gold', from: from.wallet, to, amount: '0.01' },
    headers: from.headers,
  });
  expect(sent.status, sent.text).toBe(201);
}

async function newestEventId(t: TestApp, headers: Record<string, string>): Promise<number> {
  let after = '0';
  for (;;) {
    const page = await t.http('GET', `/api/v1/events?after=${after}&limit=1000`, { headers });
    expect(page.status, page.text).toBe(200);
    if (page.body.data.length === 0) return Number(after);
    after = page.body.data.at(-1).id;
    if (!page.body.next_cursor) return Number(after);
  }
}

async function adminExecute(sql: string): Promise<void> {
  const opened = await openDatabase({ databaseUrl: ADMIN_URL, sqlitePath: '' });
  const admin = opened.orm;
  try {
    await admin.em.getConnection().execute(sql);
  } finally {
    await opened.close();
  }
}

describe.each(DB_KINDS)('32.4: event ids after a restore to an older backup, on %s', (kind) => {
  const root = mkdtempSync(path.join(tmpdir(), 'gats-restore-'));
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  });

  /** A real backup of the app's database; returns how to restore it: the restored database's env. */
  async function backup(t: TestApp): Promise<() => Promise<Record<string, string>>> {
    const { config } = t.app;
    if (!config.databaseUrl) {
      const file = path.join(root, 'backups', 'gats.sqlite');
      const copied = await runScript('src/cli/db-backup.ts', [file], { SQLITE_PATH: config.sqlitePath });
      expect(copied.code, copied.stderr).toBe(0);
      return async () => {
        const restored = path.join(root, 'restored.sqlite');
        copyFileSync(file, restored);
        return { SQLITE_PATH: restored };
      };
    }
    const file = path.join(root, 'gats.dump');
    const dumped = spawnSync('pg_dump', ['-Fc', '-d', config.databaseUrl, '-f', file], { encoding: 'utf8' });
    expect(dumped.status, dumped.stderr).toBe(0);
    return async () => {
      const name = `gats_restored_${process.pid}_${Date.now()}`;
      await adminExecute(`create database "${name}"`);
      cleanups.push(() => adminExecute(`drop database if exists "${name}" with (force)`));
      const url = new URL(ADMIN_URL);
      url.pathname = `/${name}`;
      const restored = spawnSync('pg_restore', ['--no-owner', '-d', url.href, file], { encoding: 'utf8' });
      expect(restored.status, restored.stderr).toBe(0);
      return { DATABASE_URL: url.href };
    };
  }

  it('32.4: the next id passes every id published before; undone ids are told to resync, kept ones resume', async () => {
    const before = await startTestApp(kind, { SEED_DEMO: 'always' });
    let restore: () => Promise<Record<string, string>>;
    let kept: number;
    let published: number;
    try {
      const alice = await session(before.baseUrl, 'alice');
      const bob = await session(before.baseUrl, 'bob');
      await sendGold(before, alice, bob.wallet);
      kept = await newestEventId(before, alice.headers);
      restore = await backup(before);
      for (let i = 0; i < 3; i++) await sendGold(before, alice, bob.wallet);
      published = await newestEventId(before, alice.headers);
      expect(published).toBe(kept + 3);
    } finally {
      await before.close();
    }

    const env = await restore();
    const marked = await runScript('src/cli/db-restored.ts', [], env);
    expect(marked.stderr).toBe('');
    expect(marked.code).toBe(0);
    const next = Number(
      new RegExp(`events end at ${kept}; the next event id is (\\d+)`).exec(marked.stdout)?.[1],
    );
    expect(next).toBeGreaterThan(published);
    const checked = await runScript('src/cli/db-check.ts', [], env);
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(`event ids ${kept + 1}..${next - 1} skipped by a restore`);

    const after = await startTestApp(
      kind,
      { SEED_DEMO: 'always', ...(env.SQLITE_PATH ? { SQLITE_PATH: env.SQLITE_PATH } : {}) },
      env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {},
    );
    try {
      const alice = await session(after.baseUrl, 'alice');
      const bob = await session(after.baseUrl, 'bob');
      await sendGold(after, alice, bob.wallet);
      // The new event's id is the one db:restored announced: past every id published before.
      const resumed = await after.http('GET', `/api/v1/events?after=${kept}`, { headers: alice.headers });
      expect(resumed.status).toBe(200);
      expect(resumed.body.data.map((event: { id: string }) => Number(event.id))).toEqual([next]);
      // REST: resuming from an undone id is a 410 resync.
      const undone = await after.http('GET', `/api/v1/events?after=${published}`, { headers: alice.headers });
      expect(undone.status).toBe(410);
      expect(undone.body.type).toBe('/problems/resync-required');
      expect(undone.body.detail).toMatch(/restored from a backup/);

      // WebSocket: the same, each message checked against the AsyncAPI document.
      const socket = await connect(`${after.baseUrl.replace(/^http/, 'ws')}/ws`, alice.headers);
      socket.send({ type: 'subscribe', requestId: 'undone', lastEventId: String(published) });
      const resync = await socket.next((message) => message.requestId === 'undone');
      expect(resync).toMatchObject({
        type: 'resync_required',
        reason: 'pruned',
        requestedEventId: String(published),
      });
      expect(resync.detail).toMatch(/restored from a backup/);
      // From the last kept id: the one new event replayed (the skipped ids count as no depth).
      socket.send({
        type: 'subscribe',
        requestId: 'kept',
        lastEventId: String(kept),
        events: ['newTransfer'],
      });
      expect((await socket.next((message) => message.requestId === 'kept')).type).toBe('subscribed');
      const replayed = await socket.next((message) => message.type === 'newTransfer');
      expect(replayed.id).toBe(String(next));
      socket.close();
    } finally {
      await after.close();
      if (env.SQLITE_PATH) rmSync(env.SQLITE_PATH, { force: true });
    }
  }, 180_000);
});

describe('32.4: npm run watch across a restore', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gats-watch-restore-'));
  let watch: ChildProcess | undefined;
  afterAll(() => {
    watch?.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('32.4: gets resync_required after the restore, says so, and goes on printing live events', async () => {
    // One port for both lives of the service: the watch reconnects to it, and PUBLIC_URL stays.
    const port = await freePort();
    const keep = { SECRET_KEY: TEST_SECRET_KEY, PORT: String(port) };
    const live = path.join(root, 'live');
    const first = await startService({ ...keep, DATA_DIR: live });
    const base = `http://127.0.0.1:${port}`;
    let out = '';
    let err = '';
    watch = spawn(
      process.execPath,
      ['scripts/watch.ts', '--url', base, '--user', 'alice', '--password', 'alice-demo-password'],
      {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    watch.stdout?.on('data', (chunk: Buffer) => {
      out += chunk;
    });
    watch.stderr?.on('data', (chunk: Buffer) => {
      err += chunk;
    });
    const until = async (what: string, seen: () => boolean) => {
      const deadline = Date.now() + 60_000;
      while (!seen()) {
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${what}; watch printed:\n${out}\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const printed = () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, any>);
    await until('the subscription', () => printed().some((message) => message.type === 'subscribed'));

    const backupFile = path.join(root, 'backups', 'gats.sqlite');
    const alice = await session(base, 'alice');
    const bob = await session(base, 'bob');
    expect((await runScript('src/cli/db-backup.ts', [backupFile], { ...keep, DATA_DIR: live })).code).toBe(0);
    const send = async (to: string) => {
      const sent = await fetch(`${base}/api/v1/transfer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...alice.headers },
        body: JSON.stringify({ assetId: 'gold', from: alice.wallet, to, amount: '0.01' }),
      });
      expect(sent.status).toBe(201);
    };
    await send(bob.wallet);
    await send(bob.wallet);
    await until(
      'the two transfers',
      () => printed().filter((message) => message.type === 'newTransfer').length === 2,
    );
    expect(await first.stop()).toBe(0);

    // Restore (docs/operations/backups-and-restore.md): the backup in place, marked, checked, started on the same port.
    const restored = path.join(root, 'restored');
    mkdirSync(restored, { mode: 0o700 });
    copyFileSync(backupFile, path.join(restored, 'gats.sqlite'));
    const env = { ...keep, DATA_DIR: restored };
    expect((await runScript('src/cli/db-restored.ts', [], env)).code).toBe(0);
    expect((await runScript('src/cli/db-check.ts', [], env)).code).toBe(0);
    const second = await startService(env);
    try {
      await until('the resync notice', () => /resync required \(pruned\)/.test(err));
      await until(
        'the new subscription',
        () => printed().filter((message) => message.type === 'subscribed').length === 2,
      );
      const again = await session(base, 'alice');
      const sent = await fetch(`${base}/api/v1/transfer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...again.headers },
        body: JSON.stringify({ assetId: 'gold', from: again.wallet, to: bob.wallet, amount: '0.02' }),
      });
      expect(sent.status).toBe(201);
      await until('the transfer made after the restore', () =>
        printed().some((message) => message.type === 'newTransfer' && message.data.amount === '0.02'),
      );
    } finally {
      expect(await second.stop()).toBe(0);
    }
  }, 240_000);
});

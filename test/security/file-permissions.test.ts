// Issue 13.14: the embedded state (SQLite database, WAL and shared-memory files, generated
// secret.key) is readable by the service's user only, whatever the umask; files made by an earlier
// version lose their group and other permissions at start. SQLite only: PostgreSQL keeps its files.
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/index.ts';

const mode = (file: string) => statSync(file).mode & 0o777;

describe('13.14: file permissions of the embedded state', () => {
  let root: string;
  let umask: number;

  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'gats-perms-'));
    // The usual default: files 0644, directories 0755, unless the service asks for less.
    umask = process.umask(0o022);
  });
  afterAll(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function start(dataDir: string) {
    const app = await buildApp(
      loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', SEED_DEMO: 'never' }),
    );
    close = () => app.close();
    return app;
  }

  it('13.14: creates the data directory 0700 and the SQLite files and secret.key 0600', async () => {
    const dataDir = path.join(root, 'fresh', 'data');
    await start(dataDir); // migrations have written the WAL
    expect(mode(dataDir).toString(8)).toBe('700');
    const files = ['gats.sqlite', 'gats.sqlite-wal', 'gats.sqlite-shm', 'secret.key'].map((name) =>
      path.join(dataDir, name),
    );
    for (const file of files) {
      expect(existsSync(file), file).toBe(true);
      expect([file, mode(file).toString(8)]).toEqual([file, '600']);
    }
  });

  it('13.14: takes group and other permissions away from files an earlier version left readable', async () => {
    const dataDir = path.join(root, 'upgraded');
    await start(dataDir);
    await close?.();
    close = undefined;
    const files = ['gats.sqlite', 'secret.key'].map((name) => path.join(dataDir, name));
    for (const file of files) chmodSync(file, 0o644);
    await start(dataDir);
    for (const file of files) expect([file, mode(file).toString(8)]).toEqual([file, '600']);
  });

  it('13.14: a database file created before the first start (empty) is private too', async () => {
    const dataDir = path.join(root, 'precreated');
    await start(dataDir);
    await close?.();
    close = undefined;
    const file = path.join(root, 'precreated', 'other.sqlite');
    writeFileSync(file, '', { mode: 0o666 });
    const app = await buildApp(
      loadConfig({
        PORT: '0',
        DATA_DIR: dataDir,
        SQLITE_PATH: file,
        LOG_LEVEL: 'silent',
        SEED_DEMO: 'never',
      }),
    );
    close = () => app.close();
    expect(mode(file).toString(8)).toBe('600');
  });
});

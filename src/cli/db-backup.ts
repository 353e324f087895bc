/**
 * `npm run db:backup -- FILE`: a consistent online copy of the embedded SQLite database (SQLITE_PATH,
 * default $DATA_DIR/gats.sqlite) into FILE, while the service keeps running and writing.
 *
 * `VACUUM INTO` reads the whole database inside one read transaction, so the copy is the database as
 * of one commit, whatever writers do meanwhile (WAL mode lets them go on); the copy is compact and
 * needs no -wal file. It uses better-sqlite3, the service's one SQLite library. FILE must not exist yet; its
 * folder is created (0700) when missing.
 * On PostgreSQL (DATABASE_URL set) use pg_dump: see docs/operations/backups-and-restore.md.
 *
 * Exit codes: 0 copied; 1 failed (FILE exists, database missing); 64 usage; 78 configuration.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ConfigError, loadConfig } from '../config/index.ts';
import { ensurePrivateDir } from '../crypto/private-files.ts';

function fail(message: string, code: number): never {
  console.error(message);
  process.exit(code);
}

const [target, ...extra] = process.argv.slice(2);
if (!target || extra.length > 0) fail('usage: npm run db:backup -- FILE', 64);
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) fail(`Configuration error: ${error.message}`, 78);
  throw error;
}
if (config.databaseUrl)
  fail('DATABASE_URL is set: back up PostgreSQL with pg_dump (docs/operations/backups-and-restore.md)', 64);
if (!existsSync(config.sqlitePath)) fail(`no database at ${config.sqlitePath} (SQLITE_PATH)`, 1);
const file = path.resolve(target);
if (existsSync(file)) fail(`${file} exists: choose a new file name`, 1);

// The copy holds password hashes and sealed keys: readable by its owner only, like the database, in
// a folder made for it when missing (`backups/` of docs/operations/backups-and-restore.md), private too.
process.umask(0o077);
ensurePrivateDir(path.dirname(file));
const started = Date.now();
const database = new Database(config.sqlitePath, { readonly: true, timeout: 30_000 });
try {
  database.prepare('vacuum into ?').run(file);
} catch (error) {
  fail(`backup failed: ${(error as Error).message}`, 1);
} finally {
  database.close();
}
console.log(`backed up ${config.sqlitePath} to ${file} in ${Date.now() - started} ms`);

// Runs once before any test file:
// - the service serves explorer/dist, which several files request (the browser test, the
//   security-header checks), so it is (re)built here, when missing or stale, instead of by whichever
//   of them happens to run first;
// - each database kind the run uses is migrated once into a template, which the tests' databases copy
//   (test/helpers/db.ts `migratedDatabase`); the workers find it in their environment;
// - the service processes that tests start (start-up, crash, backup tests: dozens per run) share
//   Node's compile cache, which saves about a third of each one's start-up CPU.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTemplate, DB_KINDS, dropRunDatabases, RUN_ENV, TEMPLATE_ENV } from './helpers/db.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const root = path.resolve(import.meta.dirname, '..');
  execFileSync(process.execPath, ['scripts/build-explorer.ts'], { cwd: root, stdio: 'inherit' });
  process.env.NODE_COMPILE_CACHE ??= path.join(tmpdir(), 'gats-test-compile-cache');
  const run = randomBytes(6).toString('hex');
  process.env[RUN_ENV] = run;
  const templates = await Promise.all(DB_KINDS.map(createTemplate));
  DB_KINDS.forEach((kind, i) => {
    const template = templates[i];
    process.env[TEMPLATE_ENV[kind]] = template.databaseUrl
      ? decodeURIComponent(new URL(template.databaseUrl).pathname.slice(1))
      : template.sqlitePath;
  });
  return async () => {
    if (DB_KINDS.includes('postgres')) await dropRunDatabases(run);
    await Promise.all(templates.map((template) => template.drop()));
  };
}

// 15.2: the first admin of a real deployment. `npm run admin` (src/cli/admin.ts) run as an operator
// runs it, against a scratch database of each kind: the admin it creates signs in and acts as one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCredentials } from '../../src/auth/accounts.ts';
import type { ScratchDatabase } from '../../src/db/scratch-database.ts';
import { DB_KINDS, startTestApp, TEST_SECRET_KEY, type TestApp } from '../helpers/app.ts';
import { runScript } from '../helpers/commands.ts';
import { migratedDatabase } from '../helpers/db.ts';

describe.each(DB_KINDS)('npm run admin on %s', (kind) => {
  let database: ScratchDatabase;
  let dataDir: string;
  let env: Record<string, string>;
  let app: TestApp | undefined;
  const admin = (args: string[], stdin?: string) => runScript('src/cli/admin.ts', args, env, stdin);

  beforeAll(async () => {
    database = await migratedDatabase(kind);
    dataDir = mkdtempSync(path.join(tmpdir(), 'gats-admin-'));
    env = {
      DATA_DIR: dataDir,
      SQLITE_PATH: database.sqlitePath,
      SECRET_KEY: TEST_SECRET_KEY,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    };
  });
  afterAll(async () => {
    await app?.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('15.2: create-user makes the first admin on an empty database, its generated password printed once; it signs in and changes roles', async () => {
    const created = await admin(['create-user', 'root', '--role', 'admin']);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created root \(usr_\w+\) with role admin, wallet 0x[0-9a-fA-F]{40}\n/);
    const password = /password \(shown once, store it now\): (\S+)/.exec(created.stdout)?.[1] as string;
    expect(password).toHaveLength(24);

    // The service, started on that database afterwards, seeds no demo data and lets root in as admin.
    app = await startTestApp(
      kind,
      { SQLITE_PATH: database.sqlitePath, SEED_DEMO: 'always' },
      database.databaseUrl ? { databaseUrl: database.databaseUrl } : {},
    );
    const login = await app.http('POST', '/api/v1/auth/login', { body: { username: 'root', password } });
    expect(login.status).toBe(200);
    const bearer = { authorization: `Bearer ${login.body.access_token}` };
    expect(login.body.scope).toContain('users:admin');
    const key = await app.http('POST', '/api/v1/api-keys', { body: { name: 'ops' }, headers: bearer });
    const headers = { ...bearer, 'x-api-key': key.body.key };
    const player = await app.http('POST', '/api/v1/auth/register', {
      body: { username: 'first-studio', password: 'first-studio-password' },
    });
    const promoted = await app.http('PUT', `/api/v1/users/${player.body.id}/role`, {
      body: { role: 'studio' },
      headers,
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body.role).toBe('studio');
    expect(app.app.demoAccounts).toEqual([]);
  });

  it('15.2: create-user --password-stdin takes the password from standard input and prints none', async () => {
    const created = await admin(
      ['create-user', 'Ops.Two', '--role', 'oracle', '--password-stdin'],
      'a-password-from-a-vault\n',
    );
    expect(created.code).toBe(0);
    expect(created.stdout).not.toContain('password');
    const user = await checkCredentials(
      app?.app.orm.em.fork() as never,
      'ops.two',
      'a-password-from-a-vault',
    );
    expect(user?.role).toBe('oracle');
  });

  it('15.2: set-role changes an existing user role, found regardless of case', async () => {
    const changed = await admin(['set-role', 'OPS.TWO', 'admin']);
    expect(changed.code).toBe(0);
    expect(changed.stdout).toMatch(/^Ops\.Two \(usr_\w+\) now has role admin\n$/);
    // Issue 37: each command is in the audit trail, the command and the machine's user as who acted.
    const entries = (await app?.app.orm.em
      .getConnection()
      .execute<{ body: string }[]>(
        'select body from audit_entry where body like \'%"kind":"command"%\' order by seq',
      )) as { body: string }[];
    const bodies = entries.map((entry) => JSON.parse(entry.body));
    expect(bodies.map((body) => body.action)).toEqual([
      'user.created',
      'user.roleChanged',
      'user.created',
      'user.roleChanged',
      'user.roleChanged',
    ]);
    expect(bodies[4]).toMatchObject({
      actor: { kind: 'command', id: expect.stringMatching(/^admin set-role \(.+\)$/) },
      credential: { kind: 'command' },
      before: { role: 'oracle' },
      after: { role: 'admin' },
    });
    expect(JSON.stringify(bodies)).not.toContain('a-password-from-a-vault');
  });

  it('refuses what the API refuses, changing nothing, with exit code 1 (64 for usage)', async () => {
    expect(await admin(['create-user', 'root', '--role', 'admin'])).toMatchObject({
      code: 1,
      stderr: 'refused: The username root is already registered.\n',
    });
    expect(await admin(['set-role', 'nobody', 'admin'])).toMatchObject({
      code: 1,
      stderr: 'refused: no user named nobody\n',
    });
    const weak = await admin(['create-user', 'carl', '--role', 'player', '--password-stdin'], 'short\n');
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain('refused: The password does not meet the policy.');
    for (const args of [
      ['create-user', 'x y', '--role', 'admin'],
      ['set-role', 'root', 'emperor'],
    ]) {
      const result = await admin(args);
      expect(result.code, args.join(' ')).toBe(64);
      expect(result.stderr).toContain('usage:');
    }
    // Demoting the last admins: root and Ops.Two are admins; demote one, then the other is refused.
    expect((await admin(['set-role', 'ops.two', 'player'])).code).toBe(0);
    const last = await admin(['set-role', 'root', 'player']);
    expect(last.code).toBe(1);
    expect(last.stderr).toMatch(/is the only admin/);
    const em = app?.app.orm.em.fork() as never;
    expect(await checkCredentials(em, 'carl', 'short')).toBeNull();
  }, 120_000); // seven runs of the command, each loading the service modules
});

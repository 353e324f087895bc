// 15.6: `npm run db:check` (ledger invariants) on both databases, and `npm run db:backup` of the
// embedded database while the service runs and writes: the copy restores, checks clean and serves.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { runScript } from '../helpers/commands.ts';
import { startService } from '../helpers/service.ts';

describe.each(DB_KINDS)('npm run db:check on %s', (kind) => {
  let t: TestApp;
  let env: Record<string, string>;
  const check = () => runScript('scripts/db-check.ts', [], env);

  beforeAll(async () => {
    t = await startTestApp(kind, { SEED_DEMO: 'always' });
    const { config } = t.app;
    env = config.databaseUrl ? { DATABASE_URL: config.databaseUrl } : { SQLITE_PATH: config.sqlitePath };
  });
  afterAll(() => t.close());

  it('15.6: passes on the demo ledger', async () => {
    const result = await check();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /ok; 3 currencies: supply = sum of balances; 4 NFTs: one owner each; outbox: \d+ events, ids 1\.\.\d+ without gaps/,
    );
  });

  it.runIf(kind === 'postgres')(
    '15.6: lists PostgreSQL outbox gaps as ids never committed, not as violations',
    async () => {
      // What a write that took an id and rolled back leaves: the sequence moved on, the id never stored.
      const connection = t.app.orm.em.getConnection();
      await connection.execute(`select nextval(pg_get_serial_sequence('outbox_event', 'id'))`);
      await connection.execute('delete from outbox_event where id = 2');
      const result = await check();
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/; outbox ids never committed \(rolled-back writes\): 2$/m);
    },
  );

  it('15.6: names each broken invariant and exits 1', async () => {
    const connection = t.app.orm.em.getConnection();
    const [gold] = await connection.execute<{ id: number }[]>(
      "select id from holding where asset_id = 'gold' order by id limit 1",
    );
    await connection.execute(`update holding set balance = '1' where id = ${gold.id}`);
    const [nft] = await connection.execute<{ id: string }[]>(
      "select id from asset where kind = 'nft' order by id limit 1",
    );
    await connection.execute(
      `update asset set owner = '0x000000000000000000000000000000000000dead' where id = '${nft.id}'`,
    );
    await connection.execute('delete from outbox_event where id = 3');
    const result = await check();
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    // On PostgreSQL an id gap is what a rolled-back write leaves (sequences never give ids back).
    const gapIsViolation = kind === 'sqlite';
    expect(lines[0]).toMatch(
      new RegExp(`${gapIsViolation ? 3 : 2} violation\\(s\\) of the ledger's invariants:$`),
    );
    expect(lines[1]).toMatch(/^ {2}currency gold: total supply \d+ != sum of balances \d+$/);
    expect(lines[2]).toMatch(
      new RegExp(`^  nft ${nft.id}: owner 0x0+dead but held by 0x[0-9a-f]{40} \\(1\\)$`),
    );
    expect(lines.slice(3)).toEqual(gapIsViolation ? ['  outbox: event ids 3 missing'] : []);
  });
});

describe('npm run db:backup of the embedded database', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gats-backup-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  async function session(base: string, username: string) {
    const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(base + url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    const login = await post('/api/v1/auth/login', { username, password: `${username}-demo-password` });
    const bearer = { authorization: `Bearer ${login.body.access_token}` };
    const key = await post('/api/v1/api-keys', { name: 'load' }, bearer);
    const headers = { ...bearer, 'x-api-key': key.body.key as string };
    const me = (await (await fetch(`${base}/api/v1/me`, { headers })).json()) as { wallets: string[] };
    return { post, headers, wallet: me.wallets[0] as string };
  }

  it('15.6: a backup taken under write load restores with the invariants intact', async () => {
    const live = path.join(root, 'live');
    const service = await startService({ PORT: '0', DATA_DIR: live });
    const base = `http://127.0.0.1:${service.port}`;
    const backup = path.join(root, 'backup.sqlite');
    let transfers = 0;
    try {
      const alice = await session(base, 'alice');
      const bob = await session(base, 'bob');
      let writing = true;
      const writer = async () => {
        while (writing) {
          const sent = await alice.post(
            '/api/v1/transfer',
            { assetId: 'gold', from: alice.wallet, to: bob.wallet, amount: '0.01' },
            alice.headers,
          );
          expect(sent.status).toBe(201);
          transfers++;
        }
      };
      const writers = [writer(), writer()];
      while (transfers < 10) await new Promise((resolve) => setTimeout(resolve, 50));
      const copied = await runScript('scripts/db-backup.ts', [backup], { DATA_DIR: live });
      const during = transfers;
      while (transfers < during + 10) await new Promise((resolve) => setTimeout(resolve, 50));
      writing = false;
      await Promise.all(writers);
      expect(copied.stderr).toBe('');
      expect(copied.code).toBe(0);
      expect(statSync(backup).mode & 0o777).toBe(0o600);
    } finally {
      expect(await service.stop()).toBe(0);
    }
    expect(transfers).toBeGreaterThan(20);

    // Restore: the copy becomes the database of a new data directory (with the same secret key).
    const restored = path.join(root, 'restored');
    const restoredEnv = { DATA_DIR: restored };
    mkdirSync(restored, { mode: 0o700 });
    copyFileSync(backup, path.join(restored, 'gats.sqlite'));
    copyFileSync(path.join(live, 'secret.key'), path.join(restored, 'secret.key'));
    expect(existsSync(path.join(restored, 'gats.sqlite-wal'))).toBe(false);

    const checked = await runScript('scripts/db-check.ts', [], restoredEnv);
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    const events = Number(/outbox: (\d+) events/.exec(checked.stdout)?.[1]);
    const liveCheck = await runScript('scripts/db-check.ts', [], { DATA_DIR: live });
    expect(liveCheck.code).toBe(0);
    const liveEvents = Number(/outbox: (\d+) events/.exec(liveCheck.stdout)?.[1]);
    // The copy holds some of the transfers made under load, and fewer events than the end state.
    expect(events).toBeLessThan(liveEvents);

    const again = await startService({ PORT: '0', ...restoredEnv });
    try {
      const ready = await fetch(`http://127.0.0.1:${again.port}/readyz`);
      expect(ready.status).toBe(200);
      const alice = await session(`http://127.0.0.1:${again.port}`, 'alice');
      expect(alice.wallet).toMatch(/^0x/);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  }, 180_000);
});

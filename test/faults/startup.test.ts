// Issue 14.5 and 15.4/15.7: start-up fails fast, with one line naming the setting and exit code 78
// for every configuration error, never creates a database it was not asked to, and N instances
// started together on an empty database all start. The start-up log line says what runs.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/children.ts';
import { buildApp } from '../../src/app.ts';
import { openDatabase } from '../../src/db/database.ts';
import { testConfig } from '../helpers/app.ts';
import { runScript } from '../helpers/commands.ts';
import { assertMatchesContract } from '../helpers/contract.ts';
import { DB_KINDS, freshDatabase } from '../helpers/db.ts';
import { type ServiceProcess, spawnService } from './service-process.ts';
import { REDIS_URL } from './world.ts';

const ADMIN_URL = process.env.TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

async function databaseExists(name: string): Promise<boolean> {
  const opened = await openDatabase({ databaseUrl: ADMIN_URL, sqlitePath: '' });
  const admin = opened.orm;
  try {
    const rows = await admin.em
      .getConnection()
      .execute('select 1 from pg_database where datname = ?', [name]);
    return rows.length === 1;
  } finally {
    await opened.close();
  }
}

async function dropDatabase(name: string): Promise<void> {
  const opened = await openDatabase({ databaseUrl: ADMIN_URL, sqlitePath: '' });
  const admin = opened.orm;
  try {
    await admin.em.getConnection().execute(`drop database if exists "${name}" with (force)`);
  } finally {
    await opened.close();
  }
}

/** Runs the service until it exits; returns its exit code, stderr and how long it took. */
async function failedStart(env: Record<string, string>) {
  const started = Date.now();
  const service = await spawnService(env);
  const code = await service.exited;
  return { code, stderr: service.stderr().trim(), ms: Date.now() - started };
}

describe('start-up', () => {
  it('15.4: a PORT in use is one line naming PORT and exit code 78, not a stack trace', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { code, stderr } = await failedStart({ PORT: String(port) });
      expect(code).toBe(78);
      expect(stderr.split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/PORT \d+ is already in use/);
    } finally {
      blocker.close();
    }
  });

  it('15.7: one start-up line with version, database kind, Redis, public URL and address, and no secrets', async () => {
    const service = await spawnService({});
    try {
      await service.ready();
      const line = service
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((text) => JSON.parse(text))
        .find((entry) => entry.msg === 'listening');
      expect(line).toMatchObject({
        version: expect.any(String),
        database: 'sqlite',
        redis: 'off',
        publicUrl: service.baseUrl,
        host: '127.0.0.1',
        port: service.port,
      });
      expect(service.stdout()).not.toContain('test-secret-key');
    } finally {
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
    }
  });

  it('32.5: a start with REDIS_URL, Redis up the whole time, logs no Redis outage', async () => {
    for (let start = 0; start < 2; start++) {
      const service = await spawnService({ REDIS_URL, REDIS_KEY_PREFIX: `gats-32-5-${process.pid}:` });
      try {
        await service.ready();
        // Past the link's next looks (every 250 ms) and its 1 s back-off.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const messages = service
          .stdout()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line).msg as string);
        expect(messages).toContain('listening');
        expect(messages.filter((message) => /^redis /.test(message))).toEqual([]);
      } finally {
        service.child.kill('SIGTERM');
        expect(await service.exited).toBe(0);
      }
    }
  }, 120_000);

  describe('32.6: probes and the management listener', () => {
    const logLines = (service: ServiceProcess) =>
      service
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, any>);
    /** A GET whose answer is checked against the contract. */
    const get = async (base: string, path: string) => {
      const response = await fetch(base + path);
      const contentType = response.headers.get('content-type') ?? '';
      const text = await response.text();
      const body = /json/.test(contentType) ? JSON.parse(text) : text;
      assertMatchesContract('GET', path, {
        status: response.status,
        contentType,
        body,
        headers: response.headers,
      });
      return { status: response.status, body };
    };
    const stop = async (service: ServiceProcess) => {
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
    };

    it('32.6: probes and scrapes that succeed are not logged at info; other requests still are', async () => {
      const service = await spawnService({});
      try {
        await service.ready(); // itself a series of /healthz probes
        for (let probe = 0; probe < 5; probe++)
          expect((await get(service.baseUrl, '/healthz')).status).toBe(200);
        expect((await get(service.baseUrl, '/readyz')).status).toBe(200);
        expect((await get(service.baseUrl, '/metrics')).status).toBe(200);
        expect((await get(service.baseUrl, '/openapi.json')).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const logged = logLines(service).filter((line) => line.msg === 'request');
        expect(logged.map((line) => line.operation)).toEqual(['getOpenApiDocument']);
      } finally {
        await stop(service);
      }
    }, 120_000);

    it('32.6: with MANAGEMENT_PORT, /healthz, /readyz and /metrics are served on the management listener and 404 on PORT', async () => {
      const managementPort = await freePort();
      const service = await spawnService({ MANAGEMENT_PORT: String(managementPort) });
      try {
        const deadline = Date.now() + 60_000;
        let listening: Record<string, any> | undefined;
        while (!listening) {
          listening = logLines(service).find((line) => line.msg === 'listening');
          expect(Date.now(), service.stderr()).toBeLessThan(deadline);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(listening.management).toBe(`127.0.0.1:${managementPort}`);
        const management = `http://127.0.0.1:${managementPort}`;
        for (const path of ['/healthz', '/readyz', '/metrics']) {
          expect((await get(management, path)).status, path).toBe(200);
          const refused = await get(service.baseUrl, path);
          expect(refused.status, path).toBe(404);
          expect(refused.body.type).toBe('/problems/route-not-found');
          expect(refused.body.detail).toContain('MANAGEMENT_PORT');
        }
        // The management listener serves nothing else; the public port everything else.
        // (The contract describes the public port's operations; this 404 is none of them.)
        const elsewhere = await fetch(`${management}/openapi.json`);
        expect(elsewhere.status).toBe(404);
        expect(((await elsewhere.json()) as { type: string }).type).toBe('/problems/route-not-found');
        expect((await get(service.baseUrl, '/openapi.json')).status).toBe(200);
      } finally {
        await stop(service);
      }
    }, 120_000);

    it('32.6: a MANAGEMENT_PORT in use is one line naming MANAGEMENT_PORT and exit code 78', async () => {
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const port = (blocker.address() as { port: number }).port;
      try {
        const { code, stderr } = await failedStart({ MANAGEMENT_PORT: String(port) });
        expect(code).toBe(78);
        expect(stderr).toMatch(/^Configuration error: MANAGEMENT_PORT \d+ is already in use/);
      } finally {
        blocker.close();
      }
    }, 120_000);
  });

  describe.runIf(DB_KINDS.includes('postgres'))('on PostgreSQL', () => {
    it('14.5: a typo in the database name stops with 78 naming DATABASE_URL and creates no database', async () => {
      const name = `gats_typo_${Date.now()}`;
      const { code, stderr } = await failedStart({
        DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}`,
      });
      expect(code).toBe(78);
      expect(stderr).toMatch(/DATABASE_URL names the database ".*", which does not exist/);
      expect(await databaseExists(name)).toBe(false);
    });

    it('32.2: `npm run db:migrate -- --create-database`, which that error recommends, creates the database and migrates it', async () => {
      const name = `gats_created_${Date.now()}`;
      const env = { DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}` };
      try {
        const created = await runScript('src/cli/db-migrate.ts', ['--create-database'], env);
        expect(created.stderr).toBe('');
        expect(created.code).toBe(0);
        expect(created.stdout).toMatch(/^postgresql: applied \d+ migration\(s\)/);
        expect(await databaseExists(name)).toBe(true);
        const again = await runScript('src/cli/db-migrate.ts', ['--create-database'], env);
        expect(again.stdout).toBe('postgresql: up to date\n');
        expect(again.code).toBe(0);
      } finally {
        await dropDatabase(name);
      }
    }, 120_000);

    it('14.5: an unreachable database ends start-up within DATABASE_CONNECT_TIMEOUT_MS with 78 naming DATABASE_URL', async () => {
      // A port that accepts and never answers: the slowest way for a database to be away.
      const silent = createServer(() => {});
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const port = (silent.address() as { port: number }).port;
      try {
        // Beside it, the same start against a port that refuses at once: the difference is the
        // wait for the silent database, whatever node's start-up costs on a busy machine.
        const [{ code, stderr, ms }, refused] = await Promise.all([
          failedStart({
            DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/gats`,
            DATABASE_CONNECT_TIMEOUT_MS: '1000',
          }),
          failedStart({
            DATABASE_URL: 'postgres://postgres@127.0.0.1:1/gats',
            DATABASE_CONNECT_TIMEOUT_MS: '1000',
          }),
        ]);
        expect(code).toBe(78);
        expect(stderr).toMatch(/DATABASE_URL: .* did not answer within DATABASE_CONNECT_TIMEOUT_MS/);
        expect(refused.code).toBe(78);
        expect(ms).toBeLessThan(refused.ms + 5_000); // the 1 s time-out, not the driver's minutes
      } finally {
        silent.close();
      }
    });

    it('14.5: a missing SECRET_KEY, an unreachable Redis and a SECRET_KEY that does not open the stored keys are 78, each naming its setting', async () => {
      const database = await freshDatabase('postgres');
      try {
        const url = database.databaseUrl as string;
        const missing = await failedStart({ DATABASE_URL: url, SECRET_KEY: '' });
        expect(missing.code).toBe(78);
        expect(missing.stderr).toMatch(/^Configuration error: SECRET_KEY must be set/);

        const noRedis = await failedStart({ DATABASE_URL: url, REDIS_URL: 'redis://127.0.0.1:1' });
        expect(noRedis.code).toBe(78);
        expect(noRedis.stderr).toMatch(/REDIS_URL: Redis did not answer/);

        // The database's keys are sealed with TEST_SECRET_KEY (by the start above); another key cannot open them.
        const wrongKey = await failedStart({
          DATABASE_URL: url,
          SECRET_KEY: 'another-secret-key-0123456789abcdef-xyz',
        });
        expect(wrongKey.code).toBe(78);
        expect(wrongKey.stderr).toMatch(/SECRET_KEY does not open the keys stored in this database/);
      } finally {
        await database.drop();
      }
    }, 120_000);

    it('14.6: an instance whose PUBLIC_URL differs from the one the database runs at is refused, naming PUBLIC_URL; PUBLIC_URL_CHANGE=allow moves it', async () => {
      const database = await freshDatabase('postgres');
      const start = (port: number, change: string) =>
        buildApp(
          testConfig(
            port,
            `/tmp/gats-issuer-${process.pid}-${port}`,
            { databaseUrl: database.databaseUrl, sqlitePath: '' },
            { PUBLIC_URL_CHANGE: change },
          ),
        );
      try {
        await (await start(4100, 'refuse')).close();
        await (await start(4100, 'refuse')).close(); // the same URL again: fine
        await expect(start(4101, 'refuse')).rejects.toThrow(
          /PUBLIC_URL is http:\/\/127.0.0.1:4101 but this database's service runs at http:\/\/127.0.0.1:4100/,
        );
        await (await start(4101, 'allow')).close();
        await (await start(4101, 'refuse')).close(); // moved
      } finally {
        await database.drop();
      }
    }, 120_000);

    it('14.5: three instances started at once on an empty database with SEED_DEMO=always all start', async () => {
      const database = await freshDatabase('postgres');
      const apps = await Promise.allSettled(
        [0, 1, 2].map((index) =>
          buildApp(
            testConfig(
              4000 + index,
              `/tmp/gats-concurrent-${process.pid}-${index}`,
              { databaseUrl: database.databaseUrl, sqlitePath: '' },
              { SEED_DEMO: 'always' },
            ),
          ),
        ),
      );
      try {
        expect(apps.filter((app) => app.status === 'rejected').map((app) => String(app.reason))).toEqual([]);
      } finally {
        for (const app of apps) if (app.status === 'fulfilled') await app.value.close();
        await database.drop();
      }
    }, 120_000);
  });
});

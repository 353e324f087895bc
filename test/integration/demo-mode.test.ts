// 15.3: demo mode is safe by default. While demo accounts accept their published passwords the
// service listens on loopback only unless HOST is set, and warns naming the accounts.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { hashPassword } from '../../src/auth/passwords.ts';
import { User } from '../../src/db/entities/User.ts';
import type { ScratchDatabase } from '../../src/db/scratch-database.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { DB_KINDS, testConfig } from '../helpers/app.ts';
import { freshDatabase } from '../helpers/db.ts';
import { startService } from '../helpers/service.ts';

const DEMO = ['studio', 'alice', 'bob', 'oracle', 'admin'];

/** Builds the app on `database` with `env`, returning what it decided and what it logged. */
async function boot(database: ScratchDatabase, env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gats-demo-'));
  const lines: Record<string, any>[] = [];
  const logger = createLogger('warn', { write: (line: string) => void lines.push(JSON.parse(line)) });
  const app = await buildApp(testConfig(0, dataDir, database, env), { logger });
  return {
    app,
    warnings: lines.filter((line) => line.demoAccounts),
    close: async () => {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe.each(DB_KINDS)('demo mode on %s', (kind) => {
  let database: ScratchDatabase;
  beforeAll(async () => {
    database = await freshDatabase(kind);
  });
  afterAll(() => database.drop());

  it('listens on all interfaces without demo accounts', async () => {
    const empty = await freshDatabase(kind);
    const { app, warnings, close } = await boot(empty, { SEED_DEMO: 'never' });
    await close();
    await empty.drop();
    expect(app.demoAccounts).toEqual([]);
    expect(app.listenHost).toBe('0.0.0.0');
    expect(warnings).toEqual([]);
  });

  it('15.3: with demo accounts and no HOST, listens on loopback and warns naming them', async () => {
    const { app, warnings, close } = await boot(database, { SEED_DEMO: 'always' });
    await close();
    expect(app.demoAccounts).toEqual(DEMO);
    expect(app.listenHost).toBe('127.0.0.1');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, demoAccounts: DEMO, host: '127.0.0.1' });
    expect(warnings[0].msg).toContain('studio, alice, bob, oracle, admin');
    expect(warnings[0].msg).toContain('loopback only');
  });

  it('15.3: an explicit HOST is obeyed, with a warning that the demo passwords are reachable', async () => {
    const { app, warnings, close } = await boot(database, { HOST: '0.0.0.0' });
    await close();
    expect(app.listenHost).toBe('0.0.0.0');
    expect(warnings[0].msg).toContain('HOST=0.0.0.0 is set');
  });

  it('no longer counts a demo account whose password was changed', async () => {
    const first = await boot(database, { HOST: '127.0.0.1' });
    try {
      const em = first.app.orm.em.fork();
      const admin = await em.findOneOrFail(User, { usernameNormalized: 'admin' });
      admin.passwordHash = await hashPassword('a-private-admin-password');
      await em.flush();
    } finally {
      await first.close();
    }
    const { app, close } = await boot(database, {});
    await close();
    expect(app.demoAccounts).toEqual(['studio', 'alice', 'bob', 'oracle']);
  });
});

describe('demo mode of `npm start` (node src/server.ts)', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gats-demo-start-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('15.3: the embedded default with its demo data is not reachable on other interfaces', async () => {
    const service = await startService({ PORT: '0', DATA_DIR: dataDir });
    try {
      expect(service.logs.find((line) => line.demoAccounts)?.demoAccounts).toEqual(DEMO);
      expect(service.logs.find((line) => line.listening)?.listening).toBe(`127.0.0.1:${service.port}`);
      expect(await accepts('127.0.0.1', service.port)).toBe(true);
      const external = Object.values(networkInterfaces())
        .flat()
        .find((address) => address && !address.internal && address.family === 'IPv4');
      if (external) expect(await accepts(external.address, service.port)).toBe(false);
    } finally {
      expect(await service.stop()).toBe(0);
    }
  }, 90_000); // a whole start-up with demo seeding, slow on a loaded machine
});

// Reads from a PostgreSQL streaming replica (DATABASE_READ_URLS, src/db/replicas.ts) with a real
// primary and replica the test makes itself (scripts/lib/pg-replica.ts). With the replica's replay
// paused, a just-written transfer is visible to its writer (read from the primary), on the instance
// it wrote through and on a second one told by Redis, while another reader gets the replica's older
// state, which the read cache does not keep; event pages never skip what the replica lacks. A stopped replica leaves the service serving (and /readyz green) from the
// primary; restarted, it serves again.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReplicaPair, replicaUnavailable, startReplicaPair } from '../../../scripts/lib/pg-replica.ts';
import { loadConfig } from '../../../src/config/index.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const metadata = { image: 'https://cdn.example.com/coin.png', attributes: [], creator: 'Example Studio' };
const unavailable = DB_KINDS.includes('postgres')
  ? replicaUnavailable()
  : 'PostgreSQL tests not selected (TEST_DB)';

describe('DATABASE_READ_URLS on SQLite', () => {
  it('is refused at start-up with the reason', () => {
    expect(() =>
      loadConfig({ SECRET_KEY: 'k'.repeat(40), DATABASE_READ_URLS: 'postgres://127.0.0.1:5433/gats' }),
    ).toThrow(/DATABASE_READ_URLS is set without DATABASE_URL/);
  });
});

/** Polls `check` until it returns true, at most `ms`. */
async function until(check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.skipIf(unavailable !== null)(
  `reads from a streaming replica${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let pair: ReplicaPair;
    let t: TestApp;
    /** A second instance on the same primary, replica and Redis. */
    let b: TestApp;
    let studio: HttpUser;
    let player: HttpUser;
    let observer: HttpUser;
    const gold = 'replica-gold';

    /** The routed reads so far, by target (db_routed_reads_total). */
    async function routed(): Promise<{ primary: number; replica: number }> {
      const text = (await t.http<string>('GET', '/metrics')).body;
      const count = (target: string) =>
        Number(
          new RegExp(`^db_routed_reads_total\\{target="${target}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0,
        );
      return { primary: count('primary'), replica: count('replica-1') };
    }

    async function serving(): Promise<boolean> {
      const text = (await t.http<string>('GET', '/metrics')).body;
      return /^db_replica_serving\{replica="replica-1"\} 1$/m.test(text);
    }

    async function balance(
      reader: HttpUser,
      wallet: string,
      fresh = true,
      instance: TestApp = t,
    ): Promise<string | undefined> {
      const response = await instance.http<{ data: { asset: { id: string }; balance: string }[] }>(
        'GET',
        `/wallets/${wallet}/assets`,
        { headers: { ...reader.headers, ...(fresh ? { 'cache-control': 'no-cache' } : {}) } },
      );
      expect(response.status, response.text).toBe(200);
      return response.body.data.find((holding) => holding.asset.id === gold)?.balance;
    }

    beforeAll(async () => {
      pair = await startReplicaPair();
      await pair.onPrimary('create database gats');
      const env = {
        RATE_LIMIT_REQUESTS: '100000',
        RATE_LIMIT_USER_REQUESTS: '100000',
        LOGIN_RATE_LIMIT_REQUESTS: '1000',
        DATABASE_READ_URLS: pair.replicaUrl('gats'),
        // Paused replay below must not take the replica out: the test reads its older state.
        DATABASE_READ_MAX_LAG_MS: '600000',
        DATABASE_READ_POLL_MS: '50',
        REDIS_URL,
        // This test's instances only: other files' instances publish on their own channels.
        REDIS_KEY_PREFIX: `gats-replicas-${randomUUID()}:`,
      };
      t = await startTestApp('postgres', env, { databaseUrl: pair.primaryUrl('gats') });
      // Behind one load balancer every instance has the same PUBLIC_URL (the tokens' issuer).
      b = await startTestApp(
        'postgres',
        { ...env, PUBLIC_URL: t.app.config.publicUrl },
        { databaseUrl: pair.primaryUrl('gats') },
      );
      [studio, player, observer] = await Promise.all([
        httpUser(t, 'studio'),
        httpUser(t, 'player'),
        httpUser(t, 'player'),
      ]);
      const call = async (path: string, body: unknown) => {
        const response = await t.http('POST', path, { body, headers: studio.headers });
        expect(response.status, response.text).toBe(201);
      };
      await call('/api/v1/collections', { id: 'replica-c', name: 'Replica' });
      await call('/api/v1/currencies', {
        id: gold,
        name: 'Gold',
        symbol: 'GOLD',
        decimals: 2,
        collection: 'replica-c',
        metadata,
      });
      await call(`/api/v1/currencies/${gold}/mint`, { to: player.wallet, amount: '100' });
    }, 180_000);

    afterAll(async () => {
      await b?.close();
      await t?.close();
      pair?.close();
    }, 60_000);

    it('serves reads from the replica, and a writer its own writes from the primary', async () => {
      // The replica has the mint: another reader's listing comes from it.
      await until(async () => (await balance(observer, player.wallet)) === '100');
      const before = await routed();
      expect(await balance(observer, player.wallet)).toBe('100');
      expect((await routed()).replica).toBeGreaterThan(before.replica);

      // Replay paused: the replica keeps the state before the transfer.
      await pair.onReplica('select pg_wal_replay_pause()');
      await until(async () => (await pair.onReplica('select pg_get_wal_replay_pause_state()')) === 'paused');
      try {
        await pausedReplica();
      } finally {
        // Replay resumed: the replica catches up (the next tests need it, whatever happened here).
        await pair.onReplica('select pg_wal_replay_resume()');
      }
      await until(async () => (await balance(observer, player.wallet)) === '70');
      expect(await balance(observer, observer.wallet)).toBe('30');
    }, 120_000);

    async function pausedReplica(): Promise<void> {
      const sent = await t.http('POST', '/api/v1/transfer', {
        body: { assetId: gold, from: player.wallet, to: observer.wallet, amount: '30' },
        headers: player.headers,
      });
      expect(sent.status, sent.text).toBe(201);
      // Another reader gets the replica's state: the transfer is not applied there yet.
      const replicaReads = (await routed()).replica;
      expect(await balance(observer, player.wallet)).toBe('100');
      expect(await balance(observer, player.wallet, false)).toBe('100');
      expect((await routed()).replica).toBeGreaterThan(replicaReads);
      // The writer sees its write (the primary answers it), and the read cache kept neither older
      // answer above (its key is the listing's, not the reader's): cached or not, 70.
      expect(await balance(player, player.wallet, false)).toBe('70');
      expect(await balance(player, player.wallet)).toBe('70');
      // On the second instance too: it knows of the writer's commit from A's notice (Redis), so the
      // writer's reads there go to the primary; without it they would read the replica's 100 for
      // as long as replay stays paused. Another reader there still gets the replica's state.
      await until(async () => (await balance(player, player.wallet, true, b)) === '70', 5_000);
      expect(await balance(observer, player.wallet, true, b)).toBe('100');

      // The event log skips nothing the replica lacks: a page the replica cannot complete is the primary's.
      const page = await t.http<{ data: { type: string; data: { amount?: string } }[] }>(
        'GET',
        '/api/v1/events?limit=100',
        { headers: observer.headers },
      );
      expect(page.status, page.text).toBe(200);
      expect(page.body.data.some((event) => event.type === 'newTransfer' && event.data.amount === '30')).toBe(
        true,
      );
    }

    it('serves event pages from the replica when it holds the whole page', async () => {
      await until(serving);
      const all = await t.http<{ data: { id: string }[] }>('GET', '/api/v1/events?limit=100', {
        headers: observer.headers,
      });
      expect(all.status, all.text).toBe(200);
      const ids = all.body.data.map((event) => event.id);
      expect(ids.length).toBeGreaterThanOrEqual(2);
      // Once the replica's state covers the relay's position, pages come from it, identical.
      await until(async () => {
        const before = (await routed()).replica;
        const again = await t.http<{ data: { id: string }[] }>('GET', '/api/v1/events?limit=100', {
          headers: observer.headers,
        });
        expect(again.body.data.map((event) => event.id)).toEqual(ids);
        return (await routed()).replica > before;
      });
    }, 60_000);

    it('keeps serving from the primary while the replica is down, and uses it again once it is back', async () => {
      await pair.stopReplica();
      try {
        // Reads keep working: a read that fails on the replica runs again on the primary.
        for (let read = 0; read < 3; read++) expect(await balance(observer, player.wallet)).toBe('70');
        await until(async () => !(await serving()));
        const before = await routed();
        expect(await balance(observer, player.wallet)).toBe('70');
        const after = await routed();
        expect(after.primary).toBeGreaterThan(before.primary);
        expect(after.replica).toBe(before.replica);
        // Readiness does not depend on a replica.
        expect((await t.http('GET', '/readyz')).status).toBe(200);
      } finally {
        await pair.startReplica();
      }
      await until(serving, 30_000);
      await until(async () => {
        const before = (await routed()).replica;
        expect(await balance(observer, player.wallet)).toBe('70');
        return (await routed()).replica > before;
      });
    }, 120_000);
  },
);

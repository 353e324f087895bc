// The fault tests' world: the real app in-process on a fresh PostgreSQL database (or SQLite) and,
// when asked, Redis, each reached through a fault proxy the test drives; a studio with a currency
// and two players with API keys, ready for mixed traffic.
import { randomBytes } from 'node:crypto';
import { type FaultProxy, startFaultProxy } from '../../scripts/chaos/lib/fault-proxy.ts';
import type { Logger } from '../../src/observability/logger.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { migratedDatabase, type TestDatabaseKind } from '../helpers/db.ts';
import { type HttpUser, httpUser } from '../helpers/ledger-fixtures.ts';

export const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

export interface FaultWorld {
  t: TestApp;
  /** Between the app and PostgreSQL (absent on SQLite). */
  pg?: FaultProxy;
  /** Between the app and Redis (absent without Redis). */
  redis?: FaultProxy;
  /** This world's Redis key prefix. */
  redisPrefix: string;
  /** The environment the app was started with (for a second instance). */
  env: Record<string, string>;
  studio: HttpUser;
  alice: HttpUser;
  bob: HttpUser;
  close(): Promise<void>;
}

export async function startFaultWorld(
  kind: TestDatabaseKind,
  options: { redis?: boolean; env?: Record<string, string>; logger?: Logger } = {},
): Promise<FaultWorld> {
  // SQLite: startTestApp makes its own file. PostgreSQL: a database reached through the proxy.
  const database = kind === 'postgres' ? await migratedDatabase(kind) : undefined;
  const pg = database?.databaseUrl
    ? await startFaultProxy({ host: '127.0.0.1', port: Number(new URL(database.databaseUrl).port || 5432) })
    : undefined;
  const redisTarget = new URL(REDIS_URL);
  const redis = options.redis
    ? await startFaultProxy({ host: redisTarget.hostname, port: Number(redisTarget.port || 6379) })
    : undefined;
  const redisPrefix = `gats-test-${randomBytes(4).toString('hex')}:`;
  const env: Record<string, string> = {
    RATE_LIMIT_REQUESTS: '100000',
    RATE_LIMIT_USER_REQUESTS: '100000',
    LOGIN_RATE_LIMIT_REQUESTS: '100000',
    ...(redis ? { REDIS_URL: redis.via(REDIS_URL), REDIS_KEY_PREFIX: redisPrefix } : {}),
    ...options.env,
  };
  const t = await startTestApp(kind, env, {
    ...(pg && database?.databaseUrl ? { databaseUrl: pg.via(database.databaseUrl) } : {}),
    logger: options.logger,
  });
  const [studio, alice, bob] = await Promise.all([httpUser(t, 'studio'), httpUser(t), httpUser(t)]);
  const call = (user: HttpUser, path: string, body: unknown) =>
    t.http('POST', path, { body, headers: user.headers });
  await call(studio, '/api/v1/collections', { id: 'faults', name: 'Faults' });
  const gold = await call(studio, '/api/v1/currencies', {
    id: 'gold',
    name: 'Gold',
    symbol: 'GOLD',
    decimals: 2,
    collection: 'faults',
    metadata: { image: 'https://cdn.example.com/gold.png', attributes: [], creator: 'Faults' },
  });
  if (gold.status !== 201) throw new Error(`currency not created: ${gold.text}`);
  const mint = await call(studio, '/api/v1/currencies/gold/mint', { to: alice.wallet, amount: '1000000' });
  if (mint.status !== 201) throw new Error(`mint failed: ${mint.text}`);
  return {
    t,
    pg,
    redis,
    redisPrefix,
    env,
    studio,
    alice,
    bob,
    async close() {
      pg?.heal();
      redis?.heal();
      await t.close();
      await pg?.close();
      await redis?.close();
      await database?.drop();
    },
  };
}

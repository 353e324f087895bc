// Hot reads: GET /wallets/{wallet_id}/assets for a wallet with 20 holdings (10 NFTs, 10 currencies)
// and GET /assets/{asset_id}, authenticated, beside the Koa hello baseline. The wallet read is measured
// twice: as clients send it (answered from the read cache, src/http/read-cache.ts, while the ledger
// does not change) and with `Cache-Control: no-cache` (the database and serialization every time).
// Targets (issue 4): the wallet read at >= 35% of Koa hello on SQLite, >= 25% on PostgreSQL.
//
// Then reads under writes (issue 17): wallet reads spread over 300 wallets of 10 holdings each while
// 50 transfers/s between them run in the background (each transfer changes two wallets' listings),
// cached and with `Cache-Control: no-cache`. Targets on SQLite: cached >= 30% of Koa hello, uncached
// >= 15%. `--reads hot|spread|both` picks the parts (default both).
//
// `--reads replicas` (issue 34.6, PostgreSQL only): the uncached hot reads on a primary alone against
// a primary with a streaming replica (DATABASE_READ_URLS), in the same run, on a primary and replica
// the benchmark makes (./replicas.ts).
import { randomBytes } from 'node:crypto';
import { createCollection, createCurrency, createUser, mint, type Session } from '../lib/api.ts';
import { forEachLimit } from '../lib/concurrency.ts';
import type { DbKind } from '../lib/database.ts';
import { type Service, startService } from '../lib/service.ts';
import type { AutocannonRequest } from '../lib/untyped.ts';
import { startHello } from './lib/hello.ts';
import { walletWith20Holdings } from './lib/hot-wallet.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { produceSteadily } from './lib/producer.ts';
import { record } from './lib/record.ts';
import { heading } from './lib/report.ts';
import { ratiosInRounds, roundFigures } from './lib/rounds.ts';
import { replicaReads } from './replicas.ts';

const TARGET: Record<DbKind, number> = { sqlite: 0.35, postgres: 0.25 };

export async function reads(options: BenchOptions): Promise<void> {
  if (options.reads === 'replicas') return replicaReads(options);
  if (options.reads !== 'spread') await hotReads(options);
  if (options.reads !== 'hot') await spreadReads(options);
}

async function hotReads(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const { owner, nftId } = await walletWith20Holdings(service);
      const load = (label: string, url: string, headers?: Record<string, string>): LoadOptions => ({
        label,
        url,
        headers,
        connections: options.connections,
        durationSeconds: options.durationSeconds,
        serverPid: url.startsWith(hello.baseUrl) ? hello.pid : service.pid,
      });
      const helloLoad = load('Koa hello GET /', `${hello.baseUrl}/`);
      const walletLoad = load(
        'GET /wallets/{id}/assets (20)',
        `${service.baseUrl}/wallets/${owner.wallet}/assets?limit=20`,
        owner.headers,
      );
      const walletFreshLoad = load(
        'same, Cache-Control: no-cache',
        `${service.baseUrl}/wallets/${owner.wallet}/assets?limit=20`,
        { ...owner.headers, 'cache-control': 'no-cache' },
      );
      const assetLoad = load('GET /assets/{id} (NFT)', `${service.baseUrl}/assets/${nftId}`, owner.headers);

      heading(`reads on ${kind}`, {
        connections: options.connections,
        'seconds per run': options.durationSeconds,
        rounds: options.rounds,
      });
      for (const target of [helloLoad, walletLoad, walletFreshLoad, assetLoad]) await warmUp(target);
      const [cached, fresh, asset] = await ratiosInRounds(options.rounds, () => runLoad(helloLoad), [
        { label: 'GET /wallets/{id}/assets', run: () => runLoad(walletLoad), target: TARGET[kind] },
        { label: 'GET /wallets/{id}/assets, no-cache', run: () => runLoad(walletFreshLoad) },
        { label: 'GET /assets/{id}', run: () => runLoad(assetLoad) },
      ]);
      const rounds = `median of ${options.rounds} rounds`;
      record({
        benchmark: 'reads',
        scenario: `hot wallet read (20 holdings), cached, ${kind}, ${rounds}`,
        ...roundFigures(cached),
        targets: [{ figure: 'koaRatio', atLeast: TARGET[kind], source: 'issue 4' }],
      });
      record({
        benchmark: 'reads',
        scenario: `hot wallet read (20 holdings), no-cache, ${kind}, ${rounds}`,
        ...roundFigures(fresh),
      });
      record({
        benchmark: 'reads',
        scenario: `GET /assets/{id} (an NFT), cached, ${kind}, ${rounds}`,
        ...roundFigures(asset),
      });
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

const SPREAD_WALLETS = 300;
const SPREAD_HOLDINGS = 10;
const SPREAD_TRANSFERS_PER_SECOND = 50;
const SPREAD_TARGET: Record<DbKind, { cached: number; uncached: number } | undefined> = {
  sqlite: { cached: 0.3, uncached: 0.15 },
  postgres: undefined,
};

/**
 * Wallet reads spread over 300 wallets (a random one per request), each holding 10 currencies,
 * while a producer makes 50 transfers/s between them (each from a wallet the studio controls to a
 * random reader-visible wallet): what the read cache keeps when the ledger keeps changing.
 */
async function spreadReads(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const { studio, wallets, currencies } = await spreadLedger(service);
      const spread = (label: string, headers: Record<string, string>): LoadOptions => ({
        label,
        url: service.baseUrl,
        headers,
        connections: options.connections,
        durationSeconds: options.durationSeconds,
        serverPid: service.pid,
        setupClient: (client) =>
          client.setRequests([
            {
              method: 'GET',
              headers,
              setupRequest: (request: AutocannonRequest) => ({
                ...request,
                path: `/wallets/${wallets[Math.floor(Math.random() * wallets.length)]}/assets?limit=10`,
              }),
            },
          ]),
      });
      const helloLoad: LoadOptions = {
        label: 'Koa hello GET /',
        url: `${hello.baseUrl}/`,
        connections: options.connections,
        durationSeconds: options.durationSeconds,
        serverPid: hello.pid,
      };
      const cachedLoad = spread(`GET /wallets/{1 of ${SPREAD_WALLETS}}/assets`, studio.headers);
      const freshLoad = spread('same, Cache-Control: no-cache', {
        ...studio.headers,
        'cache-control': 'no-cache',
      });
      heading(`reads under writes on ${kind}`, {
        wallets: SPREAD_WALLETS,
        'holdings per wallet': SPREAD_HOLDINGS,
        'background transfers/s': SPREAD_TRANSFERS_PER_SECOND,
        connections: options.connections,
        'seconds per run': options.durationSeconds,
        rounds: options.rounds,
      });
      for (const target of [helloLoad, cachedLoad, freshLoad]) await warmUp(target);
      /** The reads with the transfers committing beside them. */
      const underWrites = async (target: LoadOptions): Promise<LoadResult> => {
        const [result, writes] = await Promise.all([
          runLoad(target),
          produceSteadily(SPREAD_TRANSFERS_PER_SECOND, options.durationSeconds, async (sequence) => {
            const response = await fetch(`${service.baseUrl}/api/v1/transfer`, {
              method: 'POST',
              headers: { ...studio.headers, 'content-type': 'application/json' },
              body: JSON.stringify({
                assetId: currencies[sequence % currencies.length],
                from: studio.wallet,
                to: wallets[Math.floor(Math.random() * wallets.length)],
                amount: '0.01',
              }),
            });
            await response.arrayBuffer();
            return response.status === 201;
          }),
        ]);
        console.log(
          `${target.label}: background transfers ${writes.succeeded} committed, ${writes.failed} failed, ` +
            `${writes.skipped} skipped (${(writes.succeeded / writes.seconds).toFixed(1)}/s)`,
        );
        return result;
      };
      const target = SPREAD_TARGET[kind];
      // The service's CPU per answer here includes the background transfers' (about 50/s).
      const [cached, fresh] = await ratiosInRounds(options.rounds, () => runLoad(helloLoad), [
        {
          label: 'spread wallet reads under writes',
          run: () => underWrites(cachedLoad),
          target: target?.cached,
        },
        {
          label: 'spread wallet reads under writes, no-cache',
          run: () => underWrites(freshLoad),
          target: target?.uncached,
        },
      ]);
      const scenario = `spread reads (${SPREAD_WALLETS} wallets × ${SPREAD_HOLDINGS}) under ${SPREAD_TRANSFERS_PER_SECOND} transfers/s`;
      const rounds = `${kind}, median of ${options.rounds} rounds`;
      record({
        benchmark: 'reads',
        scenario: `${scenario}, cached, ${rounds}`,
        ...roundFigures(cached),
        targets: target ? [{ figure: 'koaRatio', atLeast: target.cached, source: 'issue 17' }] : [],
      });
      record({
        benchmark: 'reads',
        scenario: `${scenario}, no-cache, ${rounds}`,
        ...roundFigures(fresh),
        targets: target ? [{ figure: 'koaRatio', atLeast: target.uncached, source: 'issue 17' }] : [],
      });
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

/** 300 wallets holding 10 currencies each (minted by one studio, which also holds plenty of each). */
export async function spreadLedger(
  service: Service,
): Promise<{ studio: Session; wallets: string[]; currencies: string[] }> {
  const studio = await createUser(service, 'studio');
  await createCollection(service, studio, 'bench-spread');
  const currencies = Array.from({ length: SPREAD_HOLDINGS }, (_, index) => `spread-${index + 1}`);
  for (const currency of currencies) {
    await createCurrency(service, studio, currency, 'bench-spread');
    await mint(service, studio, currency, studio.wallet, '100000000');
  }
  const wallets = Array.from({ length: SPREAD_WALLETS }, () => `0x${randomBytes(20).toString('hex')}`);
  const mints = wallets.flatMap((wallet) => currencies.map((currency) => ({ wallet, currency })));
  await forEachLimit(mints, 16, ({ wallet, currency }) => mint(service, studio, currency, wallet, '1000'));
  return { studio, wallets, currencies };
}

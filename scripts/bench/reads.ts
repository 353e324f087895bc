// Hot reads: GET /wallets/{wallet_id}/assets for a wallet with 20 holdings (10 NFTs, 10 currencies)
// and GET /assets/{asset_id}, authenticated, beside the Koa hello baseline. The wallet read is measured
// twice: as clients send it (answered from the read cache, src/http/read-cache.ts, while the ledger
// does not change) and with `Cache-Control: no-cache` (the database and serialization every time).
// Targets (issue 4): the wallet read at >= 35% of Koa hello on SQLite, >= 25% on PostgreSQL.
import {
  call,
  createCollection,
  createCurrency,
  createNft,
  createUser,
  mint,
  type Session,
} from './lib/api.ts';
import type { DbKind } from './lib/database.ts';
import { startHello } from './lib/hello.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { baselineOf, heading, loadTable, ratio } from './lib/report.ts';
import { type Service, startService } from './lib/service.ts';

const TARGET: Record<DbKind, number> = { sqlite: 0.35, postgres: 0.25 };
const HOLDINGS_PER_KIND = 10;

export async function reads(options: BenchOptions): Promise<void> {
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
      });
      for (const target of [helloLoad, walletLoad, walletFreshLoad, assetLoad]) await warmUp(target);
      const results: LoadResult[] = [];
      for (const target of [helloLoad, walletLoad, walletFreshLoad, assetLoad, helloLoad])
        results.push(await runLoad(target));
      loadTable(results);
      const baseline = baselineOf([results[0], results[4]]);
      ratio('GET /wallets/{id}/assets', results[1].okPerSecond, baseline, TARGET[kind]);
      ratio('GET /wallets/{id}/assets, no-cache', results[2].okPerSecond, baseline);
      ratio('GET /assets/{id}', results[3].okPerSecond, baseline);
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

/** A user whose custodial wallet holds 10 NFTs and 10 currencies (it is a studio, to create them). */
async function walletWith20Holdings(service: Service): Promise<{ owner: Session; nftId: string }> {
  const owner = await createUser(service, 'studio');
  await createCollection(service, owner, 'bench-reads');
  let nftId = '';
  for (let index = 1; index <= HOLDINGS_PER_KIND; index++) {
    const currency = `coin-${String(index).padStart(2, '0')}`;
    await createCurrency(service, owner, currency, 'bench-reads');
    await mint(service, owner, currency, owner.wallet, '1000.50');
    nftId = await createNft(service, owner, 'bench-reads', `Item ${index}`);
  }
  const page = await call<{ data: unknown[] }>(
    service.baseUrl,
    'GET',
    `/wallets/${owner.wallet}/assets?limit=20`,
    { session: owner },
  );
  if (page.data.length !== 2 * HOLDINGS_PER_KIND) {
    throw new Error(`the wallet should hold ${2 * HOLDINGS_PER_KIND} assets, it holds ${page.data.length}`);
  }
  return { owner, nftId };
}

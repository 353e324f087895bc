// The hot wallet of the reads benchmarks (../reads.ts, ../replicas.ts): 10 NFTs and 10 currencies.
import {
  call,
  createCollection,
  createCurrency,
  createNft,
  createUser,
  mint,
  type Session,
} from '../../lib/api.ts';
import type { Service } from '../../lib/service.ts';

const HOLDINGS_PER_KIND = 10;

/** A user whose custodial wallet holds 10 NFTs and 10 currencies (it is a studio, to create them). */
export async function walletWith20Holdings(service: Service): Promise<{ owner: Session; nftId: string }> {
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

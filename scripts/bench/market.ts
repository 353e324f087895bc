// Marketplace (issue 35), on each database, beside the Koa hello baseline in the same run:
//
// 1. Writes, in rounds (hello, purchases, offer acceptances, single transfers, hello again; the ratio
//    of each to the hello runs either side of it, median of the rounds): purchases/s
//    (POST /api/v1/listings/{id}/buy, each request a different listing, 50 buyers; a 2.5 % royalty paid
//    to a player's wallet, so every unit of the currency stays among the 100 funded wallets), offer
//    acceptances/s (POST /api/v1/offers/{id}/accept, 50 holders each accepting the next item offer on
//    an NFT it holds) and single transfers/s (POST /api/v1/transfer) as the reference. The listings
//    and offers a round uses are made through the API before it, as many as the warm-up's rate says
//    the round can take (and more).
// 2. Contention: 100 buyers race for 10 listings (all at once, each trying every listing one after
//    the other, in its own order: 100 requests in flight): exactly one sale per listing, every other answer a 409
//    (`/problems/listing-not-active`); then 90 holders race for 10 collection offers the same way,
//    each attempt with another NFT of the holder (exactly one acceptance per offer, the rest 409
//    `/problems/offer-not-open`). Anything else fails the benchmark.
// 3. Reads with 1,000,000 active listings (and 100,000 cancelled ones) of one collection, 1,000
//    sellers, inserted by SQL behind the service's back (the API would take an hour): the collection's
//    market figures (floor, last sale, 24 h volume), an item's, the listing searches (by collection
//    and status, by seller, by item, the newest), the sales history; each read's req/s and latency
//    and its share of Koa hello.
// Then the ledger's invariants: the currency's supply == the sum of its owners' balances == minted.
import { randomInt, randomUUID } from 'node:crypto';
import { call, type Session } from '../lib/api.ts';
import { forEachLimit } from '../lib/concurrency.ts';
import type { Service } from '../lib/service.ts';
import { startService } from '../lib/service.ts';
import type { AutocannonClient } from '../lib/untyped.ts';
import { startHello } from './lib/hello.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record } from './lib/record.ts';
import { fixed, heading, table } from './lib/report.ts';
import { ratiosInRounds, roundFigures } from './lib/rounds.ts';
import { COLLECTION, CURRENCY, checkInvariants, fundedUsers, randomTransfersFrom } from './transfers.ts';

const CLIENTS = 50;
const PRICE = '1.00';
const ROYALTY_BPS = 250;
const CONTENDED = 10;
const SEEDED_ACTIVE = 1_000_000;
/** Every SEEDED_CLOSED_EVERY-th seeded row is a cancelled listing: 100,000 of 1,100,000. */
const SEEDED_CLOSED_EVERY = 11;
const SEEDED_ROWS = (SEEDED_ACTIVE * SEEDED_CLOSED_EVERY) / (SEEDED_CLOSED_EVERY - 1);
const SEEDED_SELLERS = 1000;
const METADATA = { image: 'https://cdn.example.com/relic.png', creator: 'Bench' };

interface World {
  service: Service;
  studio: Session;
  users: Session[];
}

export async function market(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    // The keeper's sweep would only add noise: nothing here expires.
    const service = await startService(kind, { MARKET_SWEEP_MS: '3600000' });
    try {
      let studio: Session | undefined;
      const users = await fundedUsers(service, async (s) => {
        studio = s;
      });
      if (!studio) throw new Error('no studio');
      const world: World = { service, studio, users };
      await put(service, studio, `/api/v1/collections/${COLLECTION}/market/settings`, {
        royaltyBps: ROYALTY_BPS,
        royaltyWallet: users[users.length - 1].wallet,
      });
      await writes(world, hello, options, kind);
      await contention(world, kind);
      await reads(world, hello, options, kind);
      await checkInvariants(service, users);
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

async function put(service: Service, session: Session, path: string, body: unknown): Promise<void> {
  const response = await fetch(service.baseUrl + path, {
    method: 'PUT',
    headers: { ...session.headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`PUT ${path}: ${response.status} ${await response.text()}`);
}

/** `count` NFTs of the bench collection minted to each of `owners` (100 a call); their ids by owner. */
async function mintNfts(world: World, owners: Session[], count: number): Promise<Map<Session, string[]>> {
  const items = owners.flatMap((owner) =>
    Array.from({ length: count }, () => ({
      owner,
      item: { to: owner.wallet, nft: { name: 'Relic', metadata: { ...METADATA, attributes: [] } } },
    })),
  );
  const byOwner = new Map<Session, string[]>(owners.map((owner) => [owner, []]));
  const chunks: (typeof items)[] = [];
  for (let i = 0; i < items.length; i += 100) chunks.push(items.slice(i, i + 100));
  await forEachLimit(chunks, 4, async (chunk) => {
    const made = await call<{ nfts: { id: string }[] }>(
      world.service.baseUrl,
      'POST',
      `/api/v1/collections/${COLLECTION}/mint/batch`,
      { session: world.studio, body: { items: chunk.map((c) => c.item) } },
    );
    for (const [index, nft] of made.nfts.entries()) byOwner.get(chunk[index].owner)?.push(nft.id);
  });
  return byOwner;
}

/** Each request takes the next id of `queue` (path `pathOf(id)`); client i acts as `actors[i]`. */
function requestsFromQueue(
  actors: Session[],
  next: (actor: Session) => string | undefined,
  pathOf: (id: string) => string,
  bodyOf: (actor: Session) => unknown,
): (client: AutocannonClient) => void {
  let nextClient = 0;
  return (client) => {
    const actor = actors[nextClient++ % actors.length];
    const headers = { ...actor.headers, 'content-type': 'application/json' };
    client.setRequests([
      {
        method: 'POST',
        path: '/',
        setupRequest: (request) => {
          const id = next(actor);
          return {
            ...request,
            // An exhausted queue asks for a listing that does not exist (a 4xx, not counted).
            path: pathOf(id ?? 'none'),
            headers: { ...headers, 'idempotency-key': `${actor.userId}-${id}-${randomInt(1e9)}` },
            body: JSON.stringify(bodyOf(actor)),
          };
        },
      },
    ]);
  };
}

async function writes(
  world: World,
  hello: { baseUrl: string; pid: number },
  options: BenchOptions,
  kind: string,
): Promise<void> {
  const { service, users } = world;
  const sellers = users.slice(0, CLIENTS);
  const buyers = users.slice(CLIENTS);
  const listings: string[] = [];
  const offersByHolder = new Map<Session, string[]>(sellers.map((s) => [s, []]));
  const load = (label: string, url: string, setupClient?: (c: AutocannonClient) => void): LoadOptions => ({
    label,
    url,
    connections: CLIENTS,
    durationSeconds: options.durationSeconds,
    setupClient,
    serverPid: url.startsWith(hello.baseUrl) ? hello.pid : service.pid,
    ...(setupClient ? {} : { method: 'POST' as const, body: '{}' }),
  });
  const helloLoad = load('Koa hello POST', `${hello.baseUrl}/`);
  const purchaseLoad = load(
    'POST /api/v1/listings/{id}/buy',
    `${service.baseUrl}/`,
    requestsFromQueue(
      buyers,
      () => listings.pop(),
      (id) => `/api/v1/listings/${id}/buy`,
      (buyer) => ({ wallet: buyer.wallet }),
    ),
  );
  const acceptLoad = load(
    'POST /api/v1/offers/{id}/accept',
    `${service.baseUrl}/`,
    requestsFromQueue(
      sellers,
      (holder) => offersByHolder.get(holder)?.pop(),
      (id) => `/api/v1/offers/${id}/accept`,
      (holder) => ({ wallet: holder.wallet }),
    ),
  );
  const transferLoad = load(
    'POST /api/v1/transfer',
    `${service.baseUrl}/api/v1/transfer`,
    randomTransfersFrom(users),
  );

  /** `perSeller` NFTs minted to each seller, listed at PRICE (50 at a time through the API). */
  const stockListings = async (perSeller: number) => {
    const nfts = await mintNfts(world, sellers, perSeller);
    const work = [...nfts].flatMap(([seller, ids]) => ids.map((id) => ({ seller, id })));
    const started = performance.now();
    await forEachLimit(work, CLIENTS, async ({ seller, id }) => {
      const listing = await call<{ id: string }>(service.baseUrl, 'POST', '/api/v1/listings', {
        session: seller,
        body: { wallet: seller.wallet, assetId: id, currency: CURRENCY, price: PRICE },
      });
      listings.push(listing.id);
    });
    return work.length / ((performance.now() - started) / 1000);
  };
  /** `perHolder` NFTs minted to each seller, each with an item offer from a random buyer. */
  const stockOffers = async (perHolder: number) => {
    const nfts = await mintNfts(world, sellers, perHolder);
    const work = [...nfts].flatMap(([holder, ids]) => ids.map((id) => ({ holder, id })));
    const started = performance.now();
    await forEachLimit(work, CLIENTS, async ({ holder, id }) => {
      const bidder = buyers[randomInt(buyers.length)];
      const offer = await call<{ id: string }>(service.baseUrl, 'POST', '/api/v1/offers', {
        session: bidder,
        body: { wallet: bidder.wallet, assetId: id, currency: CURRENCY, price: PRICE },
      });
      offersByHolder.get(holder)?.push(offer.id);
    });
    return work.length / ((performance.now() - started) / 1000);
  };
  const left = () => ({
    listings: listings.length,
    offers: [...offersByHolder.values()].reduce((n, q) => n + q.length, 0),
  });

  heading(`market writes on ${kind}`, {
    wallets: users.length,
    clients: CLIENTS,
    'royalty bps': ROYALTY_BPS,
    rounds: options.rounds,
    'seconds per run': options.durationSeconds,
  });
  // The warm-up's rates size every round's stock (three times what the warm-up managed, per second).
  const WARM_SECONDS = 2;
  const listed = await stockListings(4);
  const offered = await stockOffers(4);
  console.log(
    `stock: listings created ${fixed(listed, 0)}/s, offers made ${fixed(offered, 0)}/s (50 at a time)`,
  );
  await warmUp(helloLoad);
  const warmPurchases = (await runLoad({ ...purchaseLoad, durationSeconds: WARM_SECONDS })).okPerSecond;
  const warmAccepts = (await runLoad({ ...acceptLoad, durationSeconds: WARM_SECONDS })).okPerSecond;
  await warmUp(transferLoad);
  const perRun = (rate: number) => Math.ceil((rate * 3 * options.durationSeconds) / sellers.length) + 4;
  const figures = await ratiosInRounds(options.rounds, () => runLoad(helloLoad), [
    {
      label: 'purchases',
      async run() {
        listings.length = 0;
        await stockListings(perRun(warmPurchases));
        const result = await runLoad(purchaseLoad);
        if (listings.length === 0) console.log('warning: the purchases ran out of listings');
        return result;
      },
    },
    {
      label: 'offer acceptances',
      async run() {
        for (const queue of offersByHolder.values()) queue.length = 0;
        await stockOffers(perRun(warmAccepts));
        const result = await runLoad(acceptLoad);
        if (left().offers === 0) console.log('warning: the acceptances ran out of offers');
        return result;
      },
    },
    { label: 'single transfers', run: () => runLoad(transferLoad) },
  ]);
  const [purchases, accepts, transfers] = figures;
  console.log(
    `purchases ${fixed(purchases.okPerSecond, 0)}/s (${fixed(purchases.share * 100)}% of Koa hello), ` +
      `offer acceptances ${fixed(accepts.okPerSecond, 0)}/s (${fixed(accepts.share * 100)}%), ` +
      `single transfers ${fixed(transfers.okPerSecond, 0)}/s (${fixed(transfers.share * 100)}%) in the same rounds`,
  );
  for (const [name, figure] of [
    ['purchases', purchases],
    ['offer acceptances', accepts],
    ['single transfers', transfers],
  ] as const)
    record({
      benchmark: 'market',
      scenario: `${name} (${CLIENTS} clients, ${ROYALTY_BPS / 100} % royalty), beside single transfers, ${kind}`,
      ...roundFigures(figure),
    });
}

type Attempt = { actor: Session; path: string; body: unknown; target: string };

/**
 * Every actor at once, each sending its attempts one after the other (so as many requests are in
 * flight as there are actors); the answers' statuses and problem types, and the wall time.
 */
async function race(
  service: Service,
  byActor: Attempt[][],
): Promise<{ ms: number; answers: { target: string; status: number; type?: string }[] }> {
  const started = performance.now();
  const answers: { target: string; status: number; type?: string }[] = [];
  await Promise.all(
    byActor.map(async (attempts) => {
      for (const { actor, path, body, target } of attempts) {
        // A keep-alive socket the server closes as a request leaves fails the fetch: it is sent
        // again with the same Idempotency-Key, so it applies at most once.
        const key = randomUUID();
        let response: Response | undefined;
        for (let attempt = 1; !response; attempt++) {
          try {
            response = await fetch(service.baseUrl + path, {
              method: 'POST',
              headers: { ...actor.headers, 'content-type': 'application/json', 'idempotency-key': key },
              body: JSON.stringify(body),
            });
          } catch (error) {
            if (attempt >= 3) throw error;
          }
        }
        const parsed = (await response.json().catch(() => ({}))) as { type?: string };
        answers.push({ target, status: response.status, type: parsed.type });
      }
    }),
  );
  return { ms: performance.now() - started, answers };
}

/** Exactly one 2xx per target, every other answer a 409 of `refusal`; throws otherwise. */
function judge(
  label: string,
  targets: string[],
  outcome: { ms: number; answers: { target: string; status: number; type?: string }[] },
  refusal: string,
): { wins: number; refused: number } {
  const wins = outcome.answers.filter((a) => a.status < 300);
  const refused = outcome.answers.filter((a) => a.status === 409 && a.type === refusal);
  const odd = outcome.answers.filter((a) => a.status >= 300 && !(a.status === 409 && a.type === refusal));
  // A time-out on a loaded machine (408, 503) is reported, not a failure; a second win or a 500 is.
  const broken = odd.filter((a) => a.status !== 408 && a.status !== 503);
  const perTarget = targets.map((t) => wins.filter((w) => w.target === t).length);
  console.log(
    `${label}: ${outcome.answers.length} requests in ${fixed(outcome.ms, 0)} ms: ${wins.length} won ` +
      `(per target ${[...new Set(perTarget)].join('/')}), ${refused.length} refused 409 ${refusal}, ` +
      `${odd.length} other (${JSON.stringify(odd.map((a) => a.status))})`,
  );
  if (broken.length > 0 || perTarget.some((n) => n !== 1))
    throw new Error(
      `${label}: not exactly one win per target: ${JSON.stringify(odd.slice(0, 5))} ${perTarget.join(',')}`,
    );
  return { wins: wins.length, refused: refused.length };
}

async function contention(world: World, kind: string): Promise<void> {
  const { service, studio, users } = world;
  heading(`market contention on ${kind}`, { buyers: users.length, listings: CONTENDED, offers: CONTENDED });
  // 10 listings by the studio; every one of the 100 players tries each, in its own order.
  const [relics] = [...(await mintNfts(world, [studio], CONTENDED)).values()];
  /** One by one: what each POST created, its id. */
  const created = async (path: string, each: [Session, Record<string, unknown>][]) => {
    const ids: string[] = [];
    for (const [session, body] of each)
      ids.push((await call<{ id: string }>(service.baseUrl, 'POST', path, { session, body })).id);
    return ids;
  };
  const listingIds = await created(
    '/api/v1/listings',
    relics.map((id) => [studio, { wallet: studio.wallet, assetId: id, currency: CURRENCY, price: PRICE }]),
  );
  const shuffled = <T>(items: T[]) => {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = randomInt(i + 1);
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy;
  };
  const buys = users.map((buyer) =>
    shuffled(listingIds).map((id) => ({
      actor: buyer,
      path: `/api/v1/listings/${id}/buy`,
      body: { wallet: buyer.wallet },
      target: id,
    })),
  );
  const bought = await race(service, buys);
  const listingsRace = judge('100 buyers, 10 listings', listingIds, bought, '/problems/listing-not-active');

  // 10 collection offers from 10 players; the 90 others each try every offer with another NFT of theirs.
  const bidders = users.slice(0, CONTENDED);
  const holders = users.slice(CONTENDED);
  const offerIds = await created(
    '/api/v1/offers',
    bidders.map((bidder) => [
      bidder,
      { wallet: bidder.wallet, collection: COLLECTION, currency: CURRENCY, price: PRICE },
    ]),
  );
  const held = await mintNfts(world, holders, CONTENDED);
  const accepts = holders.map((holder) =>
    shuffled(offerIds).map((id, index) => ({
      actor: holder,
      path: `/api/v1/offers/${id}/accept`,
      body: { wallet: holder.wallet, assetId: held.get(holder)?.[index] },
      target: id,
    })),
  );
  const accepted = await race(service, accepts);
  // The studio's proceeds go back to a player: the invariants count the 100 players' wallets.
  const studioGold = await call<{ data: { asset: { id: string }; balance: string }[] }>(
    service.baseUrl,
    'GET',
    `/wallets/${studio.wallet}/assets?kind=fungible&limit=100`,
    { session: studio },
  );
  const proceeds = studioGold.data.find((h) => h.asset.id === CURRENCY)?.balance;
  if (proceeds)
    await call(service.baseUrl, 'POST', '/api/v1/transfer', {
      session: studio,
      body: { assetId: CURRENCY, from: studio.wallet, to: users[0].wallet, amount: proceeds },
    });
  const offersRace = judge(
    `${holders.length} holders, 10 collection offers`,
    offerIds,
    accepted,
    '/problems/offer-not-open',
  );
  record({
    benchmark: 'market',
    scenario: `contention: 100 buyers x 10 listings, ${holders.length} holders x 10 collection offers, every actor at once, ${kind}`,
    figures: [
      { name: 'purchase race', value: Math.round(bought.ms), unit: 'ms' },
      { name: 'sales', value: listingsRace.wins, unit: '' },
      { name: 'purchases refused (409)', value: listingsRace.refused, unit: '' },
      { name: 'acceptance race', value: Math.round(accepted.ms), unit: 'ms' },
      { name: 'acceptances', value: offersRace.wins, unit: '' },
      { name: 'acceptances refused (409)', value: offersRace.refused, unit: '' },
    ],
  });
}

/** The seeding statement: SEEDED_ROWS listings of the bench collection, by SQL (see the header). */
function seedListingsSql(kind: string): string {
  const columns =
    'id, status, end_reason, seller_user_id, seller_wallet, asset_id, collection_id, amount, currency_id, ' +
    'price, expires_at, created_at, updated_at, operation_id, closed_by';
  // Prices 100.00 to 10,099.99, scattered; one in ten with a far expiry; older than the API's rows.
  // Each names one of the collection's NFTs minted so far (a listing's answer shows its item).
  const NFTS =
    `nft as (select id, row_number() over (order by id) - 1 as k from asset ` +
    `where collection_id = '${COLLECTION}' and kind = 'nft')`;
  if (kind === 'postgres')
    return (
      `with ${NFTS} insert into listing (${columns}) select 'lst_' || lpad(i::text, 26, '0'), ` +
      `case when i % ${SEEDED_CLOSED_EVERY} = 0 then 'cancelled' else 'active' end, null, 'usr_bench_seed', ` +
      `'0x' || lpad(to_hex(i % ${SEEDED_SELLERS} + 1), 40, '0'), nft.id, ` +
      `'${COLLECTION}', 1, '${CURRENCY}', 10000 + (i::bigint * 7919) % 1000000, ` +
      `case when i % 10 = 0 then now() + interval '30 days' else null end, ` +
      `now() - interval '2 days', now() - interval '2 days', null, null from generate_series(1, ${SEEDED_ROWS}) i ` +
      `join nft on nft.k = i % (select count(*) from nft)`
    );
  const day = 86_400_000;
  return (
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${SEEDED_ROWS}), ${NFTS} ` +
    `insert into listing (${columns}) select 'lst_' || printf('%026d', i), ` +
    `case when i % ${SEEDED_CLOSED_EVERY} = 0 then 'cancelled' else 'active' end, null, 'usr_bench_seed', ` +
    `'0x' || printf('%040x', i % ${SEEDED_SELLERS} + 1), nft.id, ` +
    `'${COLLECTION}', printf('%078d', 1), '${CURRENCY}', printf('%078d', 10000 + (i * 7919) % 1000000), ` +
    `case when i % 10 = 0 then ${Date.now() + 30 * day} else null end, ` +
    `${Date.now() - 2 * day}, ${Date.now() - 2 * day}, null, null from n ` +
    `join nft on nft.k = i % (select count(*) from nft)`
  );
}

async function reads(
  world: World,
  hello: { baseUrl: string; pid: number },
  options: BenchOptions,
  kind: string,
): Promise<void> {
  const { service, users, studio } = world;
  // The service stops for the bulk insert (one statement holding the write lock for minutes) and
  // starts again on the grown database, as an upgrade would.
  await service.stopProcess();
  const started = performance.now();
  await service.execute(seedListingsSql(kind));
  // PostgreSQL's autovacuum analyzes a table this grown within a minute; the run does not wait for it.
  if (kind === 'postgres') await service.execute('analyze listing');
  const seedSeconds = (performance.now() - started) / 1000;
  if (!service.restart) throw new Error('the service cannot be restarted');
  await service.restart();
  const rows = await service.count('select count(*) as n from listing');
  console.log(`seeded ${SEEDED_ROWS} listings by SQL in ${fixed(seedSeconds)} s; ${rows} listings in all`);
  const [item] = [...(await mintNfts(world, [studio], 1)).values()][0];
  await call(service.baseUrl, 'POST', '/api/v1/listings', {
    session: studio,
    body: { wallet: studio.wallet, assetId: item, currency: CURRENCY, price: '5000' },
  });
  const seller = `0x${(1).toString(16).padStart(40, '0')}`;
  // A price-order cursor half way up the seeded prices (10,000 to 1,009,999 base units): the page
  // after it (src/domain/ledger/listings-by-price.ts; the cursor is the API's own format).
  const MIDDLE = Buffer.from(
    JSON.stringify({ l: `listings:price:${CURRENCY}`, k: ['510000', 'lst_0'] }),
  ).toString('base64url');
  const reader = users[0];
  const paths: [string, string][] = [
    [
      'collection market (floor, last sale, 24 h)',
      `/api/v1/collections/${COLLECTION}/market?currency=${CURRENCY}`,
    ],
    ['item market', `/api/v1/assets/${item}/market?currency=${CURRENCY}`],
    ['listings: newest', '/api/v1/listings?limit=20'],
    ['listings: collection, active', `/api/v1/listings?collection=${COLLECTION}&status=active&limit=20`],
    ['listings: collection, sold', `/api/v1/listings?collection=${COLLECTION}&status=sold&limit=20`],
    [
      'listings: collection, cancelled',
      `/api/v1/listings?collection=${COLLECTION}&status=cancelled&limit=20`,
    ],
    ['listings: collection, expired', `/api/v1/listings?collection=${COLLECTION}&status=expired&limit=20`],
    ['listings: seller, active', `/api/v1/listings?seller=${seller}&status=active&limit=20`],
    ['listings: item', `/api/v1/listings?assetId=${item}`],
    [
      'listings: collection, cheapest first',
      `/api/v1/listings?collection=${COLLECTION}&currency=${CURRENCY}&sort=price&limit=20`,
    ],
    [
      'listings: collection, cheapest first, from the middle',
      `/api/v1/listings?collection=${COLLECTION}&currency=${CURRENCY}&sort=price&limit=20&cursor=${MIDDLE}`,
    ],
    ['listings: item, cheapest first', `/api/v1/listings?assetId=${item}&currency=${CURRENCY}&sort=price`],
    ['sales: collection', `/api/v1/sales?collection=${COLLECTION}&limit=20`],
  ];
  // One request of each first: a read that takes seconds is reported, and measured with fewer clients.
  const single: [string, number][] = [];
  for (const [label, path] of paths) {
    const begun = performance.now();
    const response = await fetch(service.baseUrl + path, {
      headers: { ...reader.headers, 'cache-control': 'no-cache' },
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
    single.push([label, performance.now() - begun]);
  }
  heading(`market reads on ${kind}`, {
    listings: rows,
    'seeded active': SEEDED_ACTIVE,
    sellers: SEEDED_SELLERS,
    connections: options.connections,
    rounds: options.rounds,
    'seconds per run': options.durationSeconds,
  });
  table(
    ['read (one request, cold)', 'ms'],
    single.map(([label, ms]) => [label, fixed(ms)]),
  );
  const load = (label: string, url: string, pid: number): LoadOptions => ({
    label,
    url,
    connections: options.connections,
    durationSeconds: options.durationSeconds,
    headers: { ...reader.headers, 'cache-control': 'no-cache' },
    serverPid: pid,
  });
  const helloLoad = load('Koa hello GET /', `${hello.baseUrl}/`, hello.pid);
  const targets = paths.map(([label, path]) => load(label, service.baseUrl + path, service.pid));
  for (const target of [helloLoad, ...targets]) await warmUp(target, 1);
  const figures = await ratiosInRounds(
    options.rounds,
    () => runLoad(helloLoad),
    targets.map((target) => ({ label: target.label, run: (): Promise<LoadResult> => runLoad(target) })),
  );
  for (const figure of figures)
    record({
      benchmark: 'market',
      scenario: `read with ${SEEDED_ACTIVE.toLocaleString('en')} active listings: ${figure.label}, ${kind}`,
      ...roundFigures(figure),
      figures: [
        ...roundFigures(figure).figures,
        {
          name: 'one request, cold',
          value: Math.round((single.find(([l]) => l === figure.label)?.[1] ?? 0) * 10) / 10,
          unit: 'ms',
        },
      ],
    });
}

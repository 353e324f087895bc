// Issue 35: the market figures' reads do not grow with the number of listings, offers or sales. Each
// read the service issues (src/domain/ledger/market-figures.ts: the floor of a collection, of an item and of
// an attribute value, the best offer of each and of a trait, the last sale) is built here the same way and EXPLAINed over 3,000 listings and sales and 20,000 offers of one collection,
// analyzed: each walks its index in the order asked (no sort of the matches) and stops at its limit.
// The listings cheapest first (`sort=price`, src/domain/ledger/listings-by-price.ts) are EXPLAINed as
// the service builds them, first page and after a cursor, here and on PostgreSQL with stale statistics
// (50,000 listings written after the table was analyzed, autovacuum off for it), and so is the trait
// floor (their attribute values' rows written likewise).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { Listing } from '../../../src/db/entities/Listing.ts';
import { ListingTrait } from '../../../src/db/entities/ListingTrait.ts';
import { Offer } from '../../../src/db/entities/Offer.ts';
import { Sale } from '../../../src/db/entities/Sale.ts';
import type { Orm } from '../../../src/db/orm.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import {
  type PriceOrderFilters,
  priceOrderQuery,
  traitFloorQuery,
} from '../../../src/domain/ledger/listings-by-price.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';
import { type PlanNode, pagePlanProblems } from '../../helpers/pg-plans.ts';

const ROWS = 3000;
const OFFERS = 20_000;
const WALLET = '0x00000000000000000000000000000000000000a1';
const id = (prefix: string, i: number) => `${prefix}_${String(i).padStart(26, '0')}`;

/** The shapes of a price-ordered listings read, with the index each walks. */
const PRICE_SHAPES: [PriceOrderFilters, string][] = [
  [{ currency: 'gold', collection: 'realm' }, 'listing_collection_id_status_currency_id_price_id_index'],
  [{ currency: 'gold', assetId: id('nft', 7) }, 'listing_asset_id_status_currency_id_price_id_index'],
  [
    { currency: 'gold', collection: 'realm', assetId: id('nft', 7) },
    'listing_asset_id_status_currency_id_price_id_index',
  ],
];

describe.each(DB_KINDS)('market read plans on %s', (kind) => {
  let db: ScratchDatabase;
  let opened: Database;
  let orm: Orm;

  beforeAll(async () => {
    db = await migratedDatabase(kind);
    opened = await openDatabase(db);
    orm = opened.orm;
    const em = orm.em.fork();
    const at = Date.now() - 3_600_000;
    await em.insertMany(
      Listing,
      Array.from({ length: ROWS }, (_, i) => ({
        id: id('lst', i),
        status: i % 3 === 0 ? ('sold' as const) : ('active' as const),
        endReason: null,
        sellerUserId: 'usr_1',
        sellerWallet: WALLET,
        assetId: `nft_${String(i % 500).padStart(26, '0')}`,
        collectionId: i % 10 === 0 ? 'other' : 'realm',
        amount: 1n,
        currencyId: i % 2 === 0 ? 'gold' : 'gems',
        price: BigInt(1 + ((i * 7919) % 100_000)),
        expiresAt: i % 4 === 0 ? new Date(at) : null,
        createdAt: new Date(at + i),
        updatedAt: new Date(at + i),
        operationId: null,
        closedBy: null,
      })),
    );
    await em.insertMany(
      Sale,
      Array.from({ length: ROWS }, (_, i) => ({
        id: id('op', i),
        listingId: id('lst', i),
        assetId: `nft_${String(i % 500).padStart(26, '0')}`,
        collectionId: 'realm',
        amount: 1n,
        currencyId: i % 2 === 0 ? 'gold' : 'gems',
        price: 100n,
        royalty: 5n,
        fee: 2n,
        sellerProceeds: 93n,
        sellerWallet: WALLET,
        buyerWallet: WALLET,
        createdAt: new Date(at + i),
      })),
    );
    await em.insertMany(
      Offer,
      // More than the listings: with a few hundred matches PostgreSQL sorts them rather than walk.
      Array.from({ length: OFFERS }, (_, i) => ({
        id: id('ofr', i),
        status: i % 3 === 0 ? ('accepted' as const) : ('open' as const),
        bidderUserId: 'usr_1',
        bidderWallet: WALLET,
        // Item and trait offers among the collection offers: the collection's best offer must not
        // walk them, nor the best trait offer the others.
        assetId: i % 5 < 3 ? null : `nft_${String(i % 500).padStart(26, '0')}`,
        collectionId: i % 10 === 1 ? 'other' : 'realm',
        traitType: i % 5 === 2 ? (i % 3 === 0 ? 'rarity' : 'level') : null,
        traitValue: i % 5 === 2 ? String(i % 7) : null,
        currencyId: i % 2 === 0 ? 'gold' : 'gems',
        price: BigInt(1 + ((i * 7919) % 100_000)),
        expiresAt: i % 4 === 0 ? new Date(at) : null,
        createdAt: new Date(at + i),
        updatedAt: new Date(at + i),
        operationId: null,
        soldAssetId: null,
        closedBy: null,
      })),
    );
    await em.insertMany(
      ListingTrait,
      // The active listings' attribute values (two each), as the ledger store writes them.
      Array.from({ length: ROWS }, (_, i) => i)
        .filter((i) => i % 3 !== 0)
        .flatMap((i) =>
          [
            ['rarity', String(i % 7)],
            ['level', String(i % 11)],
          ].map(([traitType, traitValue]) => ({
            listingId: id('lst', i),
            traitType,
            traitValue,
            collectionId: i % 10 === 0 ? 'other' : 'realm',
            currencyId: i % 2 === 0 ? 'gold' : 'gems',
            price: BigInt(1 + ((i * 7919) % 100_000)),
            expiresAt: i % 4 === 0 ? new Date(at) : null,
          })),
        ),
    );
    await em.execute(
      kind === 'sqlite' ? 'analyze' : 'analyze listing; analyze sale; analyze offer; analyze listing_trait',
    );
  }, 120_000);

  afterAll(async () => {
    await opened.close();
    await db.drop();
  });

  async function plan(sql: string): Promise<string> {
    const rows = await orm.em
      .fork()
      .execute(`${kind === 'sqlite' ? 'explain query plan' : 'explain'} ${sql}`);
    return rows.map((row: Record<string, unknown>) => String(row.detail ?? row['QUERY PLAN'])).join('\n');
  }

  const buyable = () => ({
    status: 'active' as const,
    $or: [{ expiresAt: null }, { expiresAt: { $gt: new Date() } }],
  });

  it('the floor of a collection and of an item: one index walked in price order, no sort', async () => {
    const em = orm.em.fork();
    const floors = [
      [
        em
          .createQueryBuilder(Listing)
          .select('*')
          .where({ collectionId: 'realm', currencyId: 'gold', ...buyable() })
          .orderBy([{ price: 'asc' }, { id: 'asc' }])
          .limit(1),
        'listing_collection_id_status_currency_id_price_id_index',
      ],
      [
        em
          .createQueryBuilder(Listing)
          .select('*')
          .where({ assetId: `nft_${'7'.padStart(26, '0')}`, currencyId: 'gold', ...buyable() })
          .orderBy([{ price: 'asc' }, { id: 'asc' }])
          .limit(1),
        'listing_asset_id_status_currency_id_price_id_index',
      ],
    ] as const;
    for (const [query, index] of floors) {
      const explained = await plan(query.getFormattedQuery());
      expect(explained, explained).toContain(index);
      expect(explained, explained).not.toMatch(/TEMP B-TREE|Sort/);
    }
  });

  it('the trait floor: one index of the active listings’ attribute values walked in price order, no sort', async () => {
    const query = traitFloorQuery(orm.em.fork(), 'realm', 'gold', { type: 'rarity', value: '3' }, new Date());
    const explained = await plan(query.getFormattedQuery());
    expect(explained, explained).toContain('listing_trait_floor_index');
    expect(explained, explained).not.toMatch(/TEMP B-TREE|Sort/);
  });

  it('the last sale of a collection and of an item: one index walked backwards, no sort', async () => {
    const em = orm.em.fork();
    for (const [where, index] of [
      [{ collectionId: 'realm', currencyId: 'gold' }, 'sale_collection_id_currency_id_created_at_id_index'],
      [
        { assetId: `nft_${'7'.padStart(26, '0')}`, currencyId: 'gold' },
        'sale_asset_id_currency_id_created_at_id_index',
      ],
    ] as const) {
      const query = em
        .createQueryBuilder(Sale)
        .select('*')
        .where(where)
        .orderBy([{ createdAt: 'desc' }, { id: 'desc' }])
        .limit(1);
      const explained = await plan(query.getFormattedQuery());
      expect(explained, explained).toContain(index);
      expect(explained, explained).not.toMatch(/TEMP B-TREE|Sort/);
    }
  });

  it('the best offer of a collection, of an item and of a trait: one index walked from the highest price, no sort', async () => {
    const em = orm.em.fork();
    // The expiry is checked on the rows read (src/domain/ledger/market-figures.ts, `bestOffer`).
    const open = { status: 'open' as const, currencyId: 'gold' };
    for (const [where, index] of [
      [{ collectionId: 'realm', assetId: null, traitType: null }, 'offer_collection_offer_price_index'],
      [{ assetId: `nft_${'7'.padStart(26, '0')}` }, 'offer_asset_id_status_currency_id_price_id_index'],
      // One read per attribute value of an item (trait offers, issue 35).
      [{ collectionId: 'realm', traitType: 'rarity', traitValue: '3' }, 'offer_trait_offer_price_index'],
    ] as const) {
      const query = em
        .createQueryBuilder(Offer)
        .select('*')
        .where({ ...where, ...open })
        .orderBy([{ price: 'desc' }, { id: 'desc' }])
        .limit(1);
      const explained = await plan(query.getFormattedQuery());
      expect(explained, explained).toContain(index);
      expect(explained, explained).not.toMatch(/TEMP B-TREE|Sort/);
    }
  });
  it('the listings cheapest first (sort=price): each shape walks its index in price order, no sort', async () => {
    // PostgreSQL knows an NFT's 6 listings here and rightly sorts them: an item listed many times is
    // checked below, on stale statistics.
    for (const [filters, index] of PRICE_SHAPES.filter(([f]) => kind === 'sqlite' || !f.assetId)) {
      for (const after of [undefined, ['50000', id('lst', 1500)] as [string, string]]) {
        const query = priceOrderQuery(orm.em.fork(), filters, after, 20, new Date());
        const explained = await plan(query.getFormattedQuery());
        expect(explained, explained).toContain(index);
        expect(explained, explained).not.toMatch(/TEMP B-TREE|Sort/);
      }
    }
  });
});

/** How stale the statistics are when the 50,000 listings arrive. */
const STALE: [name: string, analyzedAt: number][] = [
  ['analyzed while empty', 0],
  ['analyzed at 1,000 listings', 1_000],
];
const LISTINGS = 50_000;

/**
 * Listings first..last: 20 collections, 9 in 10 in gold, 2 in 3 active (some expired), every fifth an
 * amount of the currency `ore`, the others of 10,000 NFTs, prices from 1 to 5,000 (many equal).
 */
const insertListings = (first: number, last: number) => `insert into listing (id, status, end_reason,
    seller_user_id, seller_wallet, asset_id, collection_id, amount, currency_id, price, expires_at,
    created_at, updated_at, operation_id, closed_by)
  select 'lst_' || lpad(g::text, 26, '0'), case when g % 3 = 0 then 'sold' else 'active' end, null,
    'usr_1', '${WALLET}', case when g % 5 = 0 then 'ore' else 'nft_' || lpad((g % 10000)::text, 26, '0') end,
    'c' || (g % 20),
    1, case when g % 10 = 0 then 'gems' else 'gold' end, 1 + (g * 7919) % 5000,
    case when g % 7 = 0 then now() - interval '1 hour' else null end, now(), now(), null, null
  from generate_series(${first}, ${last}) g`;

/** The active listings' attribute values among first..last (each has a `rarity` of 4 values). */
const insertTraits = (first: number, last: number) => `insert into listing_trait (listing_id, trait_type,
    trait_value, collection_id, currency_id, price, expires_at)
  select 'lst_' || lpad(g::text, 26, '0'), 'rarity', (g % 4)::text, 'c' || (g % 20),
    case when g % 10 = 0 then 'gems' else 'gold' end, 1 + (g * 7919) % 5000,
    case when g % 7 = 0 then now() - interval '1 hour' else null end
  from generate_series(${first}, ${last}) g where g % 3 <> 0`;

describe.runIf(DB_KINDS.includes('postgres')).each(STALE)(
  'listings cheapest first on PostgreSQL, %s',
  (_state, analyzedAt) => {
    let db: ScratchDatabase;
    let opened: Database;
    let orm: Orm;

    beforeAll(async () => {
      db = await migratedDatabase('postgres');
      opened = await openDatabase(db);
      orm = opened.orm;
      const connection = orm.em.getConnection();
      // Nothing analyzes the table behind the test's back: the planner sees it as at `analyzedAt`.
      await connection.execute('alter table listing set (autovacuum_enabled = false)');
      await connection.execute('alter table listing_trait set (autovacuum_enabled = false)');
      if (analyzedAt > 0) {
        await connection.execute(insertListings(1, analyzedAt));
        await connection.execute(insertTraits(1, analyzedAt));
      }
      await connection.execute('analyze listing');
      await connection.execute('analyze listing_trait');
      await connection.execute(insertListings(analyzedAt + 1, LISTINGS));
      await connection.execute(insertTraits(analyzedAt + 1, LISTINGS));
    }, 120_000);

    afterAll(async () => {
      await opened.close();
      await db.drop();
    });

    const shapes: [PriceOrderFilters, string][] = [
      [{ currency: 'gold', collection: 'c3' }, 'listing_collection_id_status_currency_id_price_id_index'],
      // An amount of a currency listed 10,000 times (every fifth listing), and an NFT listed 5 times.
      [{ currency: 'gold', assetId: 'ore' }, 'listing_asset_id_status_currency_id_price_id_index'],
      [{ currency: 'gold', assetId: id('nft', 7) }, 'listing_asset_id_status_currency_id_price_id_index'],
      [
        { currency: 'gold', collection: 'c3', assetId: 'ore' },
        'listing_asset_id_status_currency_id_price_id_index',
      ],
    ];

    it.each(shapes)(
      'reads %j from its index under the LIMIT, no sort, first page and after a cursor',
      async (filters, index) => {
        for (const after of [undefined, ['2500', id('lst', 25_000)] as [string, string]]) {
          for (const limit of [20, 100]) {
            const query = priceOrderQuery(orm.em.fork(), filters, after, limit, new Date());
            const [row] = await orm.em
              .fork()
              .execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
                `explain (format json) ${query.getFormattedQuery()}`,
              );
            const planned = row['QUERY PLAN'][0].Plan;
            expect(pagePlanProblems(planned, 'listing'), JSON.stringify(planned)).toEqual([]);
            expect(JSON.stringify(planned)).toContain(index);
          }
        }
      },
    );

    it('reads the trait floor from its index under the LIMIT, no sort', async () => {
      const query = traitFloorQuery(orm.em.fork(), 'c3', 'gold', { type: 'rarity', value: '1' }, new Date());
      const [row] = await orm.em
        .fork()
        .execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
          `explain (format json) ${query.getFormattedQuery()}`,
        );
      const planned = row['QUERY PLAN'][0].Plan;
      expect(pagePlanProblems(planned, 'listing_trait'), JSON.stringify(planned)).toEqual([]);
      expect(JSON.stringify(planned)).toContain('listing_trait_floor_index');
    });
  },
);

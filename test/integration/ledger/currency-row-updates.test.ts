// Issue 34 item 5, PostgreSQL: a currency's supply change stays on the row's page (HOT) when the
// page is otherwise full. Every mint and burn updates the currency's asset row (total_supply) and
// every transfer looks it up twice by primary key while it holds the sender's holding (the movable
// guard, the transfer's foreign-key check). An update that cannot stay on the page adds an entry to
// every index of asset, which each later lookup visits until VACUUM: on a ledger grown to 100,000
// wallets, 75 buffers a lookup. The table keeps 10% of each page free
// (Migration20261129172000_asset_fillfactor), so the update fits on the page the NFTs minted after
// the currency filled.
//
// Set up so that the outcome does not depend on chance: the NFT rows are smaller than the currency's,
// so a page filled to the brim by NFTs never has room left for the currency's new version, while the
// free tenth of a page always does. (Later updates stay on the page when it is pruned, which needs
// the dead versions older than every running transaction of the cluster's snapshots: not asserted.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { createUser, type LedgerFixture, openLedger, type TestUser } from '../../helpers/ledger-fixtures.ts';

const BLOCK_SIZE = 8192;

interface Row {
  [column: string]: unknown;
}

describe.runIf(DB_KINDS.includes('postgres'))('a currency row under supply changes on PostgreSQL', () => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let player: TestUser;
  const query = (sql: string, params: unknown[] = []) =>
    fx.orm.em.getConnection().execute<Row[]>(sql, params, 'all');
  const blockOf = async (id: string) => {
    const [row] = await query(`select (ctid::text::point)[0]::int as block from asset where id = ?`, [id]);
    return Number(row.block);
  };

  beforeAll(async () => {
    fx = await openLedger('postgres');
    studio = await createUser(fx, 'studio');
    player = await createUser(fx);
    await fx.ledger.collections.create(studio, { id: 'rows', name: 'Rows' });
    await fx.ledger.assets.createCurrency(studio, {
      id: 'row-gold',
      name: 'Row gold',
      symbol: 'RG',
      decimals: 0,
      collection: 'rows',
      description: 'A currency whose row is larger than any NFT row of this test. '.repeat(6),
      metadata: { image: 'ipfs://bafy/gold.png', attributes: [], creator: 'Studio' },
    });
    // NFTs minted after it fill its page and the next ones.
    for (let batch = 0; batch < 2; batch++)
      await fx.ledger.assets.mintBatch(
        studio,
        'rows',
        Array.from({ length: 100 }, () => ({
          to: player.wallet as StoredAddress,
          nft: { name: 'Pebble', metadata: { image: 'ipfs://p', attributes: [], creator: 'S' } },
        })),
      );
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('is set up as described: the page is full of smaller NFT rows', async () => {
    const block = await blockOf('row-gold');
    const [sizes] = await query(
      `select max(pg_column_size(a.*)) filter (where kind = 'nft') as nft,
              max(pg_column_size(a.*)) filter (where id = 'row-gold') as currency,
              count(*) filter (where (ctid::text::point)[0]::int = ?) as on_page
         from asset a`,
      [block],
    );
    expect(Number(sizes.nft) + 8).toBeLessThan(Number(sizes.currency));
    // The free tenth of a page holds the currency's new version (with its line pointer).
    expect(Number(sizes.currency) + 4).toBeLessThan(BLOCK_SIZE / 10);
    expect(Number(sizes.on_page)).toBeGreaterThan(10);
  });

  it('keeps a supply change on the full page (HOT): the currency stays one index entry', async () => {
    const block = await blockOf('row-gold');
    await fx.ledger.assets.mint(studio, 'row-gold', { to: player.wallet as StoredAddress, amount: '10' });
    const [asset] = await query(`select total_supply from asset where id = 'row-gold'`);
    expect(String(asset.total_supply)).toBe('10');
    expect(await blockOf('row-gold')).toBe(block);
    // The lookup a transfer makes twice while it holds the sender's holding: the index's path to
    // its one entry, the heap page (read, then locked).
    const [explained] = await query(
      `explain (analyze, buffers, costs off, timing off, format json)
       select 1 from asset x where id = 'row-gold' for key share of x`,
    );
    const [{ Plan: plan }] = explained['QUERY PLAN'] as {
      Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number };
    }[];
    expect(plan['Shared Hit Blocks'] + plan['Shared Read Blocks']).toBeLessThanOrEqual(4);
  });
});

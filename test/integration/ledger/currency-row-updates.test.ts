// Issue 34 item 5, PostgreSQL: mints and burns never update a currency's asset row. Every transfer
// of a currency looks its asset row up twice by primary key while it holds the sender's holding (the
// movable guard, the transfer's foreign-key check). When each mint and burn updated that row
// (`asset.total_supply`), an update that could not stay on the row's page added an entry to every
// index of asset, which each later lookup visited until VACUUM: on a ledger grown to 100,000
// wallets, 62-76 buffers a lookup instead of 4-6. The supply now lives in its own narrow table,
// `asset_supply` (Migration20261129190136_asset_supply): the asset row keeps its one version (same
// ctid, same xmin) however many mints and burns there are, and the lookup stays at the index's path
// to its one entry and the heap page.
//
// Set up as the case that hurt: the NFT rows minted after the currency fill its page to the brim (the
// NFT rows are smaller than the currency's, so an update of the currency's row could not stay on it).
// On the code before asset_supply the first mint already gives the row a new version (a new ctid and
// xmin): this test fails there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { createUser, type LedgerFixture, openLedger, type TestUser } from '../../helpers/ledger-fixtures.ts';

interface Row {
  [column: string]: unknown;
}

describe.runIf(DB_KINDS.includes('postgres'))('a currency row under mints and burns on PostgreSQL', () => {
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
    expect(Number(sizes.on_page)).toBeGreaterThan(10);
  });

  it('leaves the asset row alone through mints and burns: one version, a lookup of a few buffers', async () => {
    const versionOf = async () => {
      const [row] = await query(
        `select ctid::text as ctid, xmin::text as xmin from asset where id = 'row-gold'`,
      );
      return { ctid: row.ctid, xmin: row.xmin };
    };
    const before = await versionOf();
    for (let round = 0; round < 10; round++) {
      await fx.ledger.assets.mint(studio, 'row-gold', { to: player.wallet as StoredAddress, amount: '10' });
      await fx.ledger.transfers.burn(player, {
        assetId: 'row-gold',
        from: player.wallet as StoredAddress,
        amount: '3',
      });
    }
    // The asset row did not change: not one new version, HOT or not.
    expect(await versionOf()).toEqual(before);
    // The supply moved, where the reads find it.
    const [supply] = await query(`select total_supply from asset_supply where asset_id = 'row-gold'`);
    expect(String(supply.total_supply)).toBe('70');
    const [read] = await query(
      `select (select s.total_supply from asset_supply s where s.asset_id = a.id) as total_supply from asset a where a.id = 'row-gold'`,
    );
    expect(String(read.total_supply)).toBe('70');
    // Half of each asset_supply page is kept free, so its own updates can stay on their page (HOT).
    const [options] = await query(`select reloptions from pg_class where relname = 'asset_supply'`);
    expect(options.reloptions).toEqual(['fillfactor=50']);
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

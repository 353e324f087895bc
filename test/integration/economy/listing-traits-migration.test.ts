// Issue 35: Migration20261129143000_listing_traits fills `listing_trait` for the listings active when
// it runs, from their items' metadata, as the ledger store would have written them
// (src/domain/ledger/store/listing-traits.ts): strings, numbers and booleans as their text, each value
// once, nothing for a closed listing, an object's value, a malformed attribute or `attributes` that
// is not a list. On both databases, from the schema just before it.
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.ts';
import { ListingTrait } from '../../../src/db/entities/ListingTrait.ts';
import { migrate } from '../../../src/db/orm.ts';
import { listingTraitsOf } from '../../../src/domain/ledger/store/listing-traits.ts';
import { DB_KINDS, freshDatabase } from '../../helpers/db.ts';

const BEFORE = 'Migration20261129131537_market_price_order';
const WALLET = '0x00000000000000000000000000000000000000a1';

const ITEMS: Record<string, unknown> = {
  nft_sword: {
    attributes: [
      { trait_type: 'rarity', value: 'epic' },
      { trait_type: 'rarity', value: 'epic' },
      { trait_type: 'level', value: 3 },
      { trait_type: 'weight', value: 2.5 },
      { trait_type: 'shiny', value: true },
      { trait_type: 'cursed', value: false },
      { trait_type: 'nested', value: { a: 1 } },
      { trait_type: 'none', value: null },
      { value: 'no type' },
      'not an attribute',
      { trait_type: 'long', value: 'x'.repeat(501) },
    ],
  },
  nft_plain: { image: 'https://cdn.example.com/plain.png' },
  nft_odd: { attributes: 'rarity: epic' },
};

describe.each(DB_KINDS)('listing_trait filled by its migration on %s', (kind) => {
  it('writes the rows of the active listings only, as the store would', async () => {
    const database = await freshDatabase(kind);
    const db = await openDatabase(database);
    const orm = db.orm;
    try {
      await orm.migrator.up({ to: BEFORE });
      const connection = orm.em.getConnection();
      const sqlite = kind === 'sqlite';
      const at = sqlite ? Date.now() : new Date().toISOString();
      const amount = (units: bigint) => (sqlite ? units.toString().padStart(78, '0') : units.toString());
      await connection.execute(
        'insert into users (id, username, username_normalized, password_hash, role, created_at) values (?, ?, ?, ?, ?, ?)',
        ['usr_1', 'Studio', 'studio', 'x', 'studio', at],
      );
      await connection.execute(
        'insert into collection (id, name, description, owner_id, created_at) values (?, ?, ?, ?, ?)',
        ['realm', 'Realm', null, 'usr_1', at],
      );
      let seq = 0;
      for (const [id, metadata] of Object.entries(ITEMS))
        await connection.execute(
          'insert into asset (id, seq, kind, name, description, metadata, collection_id, creator_id, owner, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [id, ++seq, 'nft', id, null, JSON.stringify(metadata), 'realm', 'usr_1', WALLET, at],
        );
      const listings: [string, string, string, bigint][] = [
        ['lst_active', 'nft_sword', 'active', 700n],
        ['lst_sold', 'nft_sword', 'sold', 500n],
        ['lst_plain', 'nft_plain', 'active', 300n],
        ['lst_odd', 'nft_odd', 'active', 200n],
      ];
      for (const [id, assetId, status, price] of listings)
        await connection.execute(
          'insert into listing (id, status, end_reason, seller_user_id, seller_wallet, asset_id, collection_id, amount, currency_id, price, expires_at, created_at, updated_at, operation_id, closed_by) values (?, ?, null, ?, ?, ?, ?, ?, ?, ?, null, ?, ?, null, null)',
          [id, status, 'usr_1', WALLET, assetId, 'realm', amount(1n), 'gold', amount(price), at, at],
        );
      // The migration under test runs first; later ones may follow it.
      expect((await migrate(orm))[0]).toBe('Migration20261129143000_listing_traits');
      const rows = await orm.em
        .fork()
        .find(
          ListingTrait,
          {},
          { orderBy: [{ listingId: 'asc' }, { traitType: 'asc' }, { traitValue: 'asc' }] },
        );
      const wanted = listingTraitsOf(ITEMS.nft_sword as Record<string, unknown>)
        .map(([type, value]) => ['lst_active', type, value, 'realm', 'gold', 700n, null])
        .sort((a, b) => String(a[1]).localeCompare(String(b[1])));
      expect(
        rows.map((row) => [
          row.listingId,
          row.traitType,
          row.traitValue,
          row.collectionId,
          row.currencyId,
          row.price,
          row.expiresAt ?? null,
        ]),
      ).toEqual(wanted);
      expect(wanted.map((row) => `${row[1]}=${row[2]}`)).toEqual([
        'cursed=false',
        'level=3',
        'rarity=epic',
        'shiny=true',
        'weight=2.5',
      ]);
    } finally {
      await db.close();
      await database.drop();
    }
  });
});

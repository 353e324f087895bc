// Issue 34 item 5: Migration20261129190136_asset_supply moves every currency's total supply from
// `asset.total_supply` to its own row in `asset_supply` and drops the column; down puts the column
// back with the same values. On both databases, from the schema just before it, with data: the
// supplies are copied exactly (up to 2^256 - 1), an NFT gets no row, the asset reads answer the same
// before and after, `db:check` answers the same before and after, and after down the column holds
// what it held.
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.ts';
import { migrate } from '../../../src/db/orm.ts';
import { UINT256_MAX } from '../../../src/db/types/uint256-range.ts';
import {
  ASSET_COLUMNS,
  type AssetRow,
  assetFieldsOf,
  TOTAL_SUPPLY_COLUMN,
} from '../../../src/domain/ledger/asset-rows.ts';
import { runScript } from '../../helpers/commands.ts';
import { DB_KINDS, freshDatabase } from '../../helpers/db.ts';

const BEFORE = 'Migration20261129172000_asset_fillfactor';
const MIGRATION = 'Migration20261129190136_asset_supply';
const A = '0x00000000000000000000000000000000000000a1';
const B = '0x00000000000000000000000000000000000000b2';
const NFT = 'nft_01M80000000000000000000000';

/** The assets' read (src/domain/ledger/asset-rows.ts) as it was before the migration. */
const OLD_ASSET_COLUMNS = ASSET_COLUMNS.replace(TOTAL_SUPPLY_COLUMN, 'a.total_supply');

describe.each(DB_KINDS)('the supply counter moved to asset_supply by its migration on %s', (kind) => {
  it('copies every supply, reads the same, checks clean, and puts the column back down', async () => {
    expect(OLD_ASSET_COLUMNS).not.toBe(ASSET_COLUMNS);
    const database = await freshDatabase(kind);
    const handle = await openDatabase(database);
    const { orm, reads } = handle;
    try {
      await orm.migrator.up({ to: BEFORE });
      const connection = orm.em.getConnection();
      const sqlite = kind === 'sqlite';
      const at = sqlite ? Date.now() : new Date().toISOString();
      /** An amount as the stores write it: zero-padded text on SQLite. */
      const amount = (value: bigint) => (sqlite ? value.toString().padStart(78, '0') : value.toString());
      const run = (sql: string, params: unknown[]) => connection.execute(sql, params);
      await run(
        'insert into users (id, username, username_normalized, password_hash, role, created_at) values (?, ?, ?, ?, ?, ?)',
        ['usr_s', 'Studio', 'studio', 'x', 'studio', at],
      );
      await run('insert into collection (id, name, owner_id, created_at) values (?, ?, ?, ?)', [
        'realm',
        'Realm',
        'usr_s',
        at,
      ]);
      const asset =
        'insert into asset (id, seq, kind, name, metadata, collection_id, creator_id, symbol, decimals, total_supply, max_supply, owner, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
      const metadata = JSON.stringify({ image: 'ipfs://x', attributes: [], creator: 'S' });
      // gold: 1500 held by two wallets; max: the largest uint256, held by one; an NFT without supply.
      await run(asset, [
        'gold',
        1,
        'fungible',
        'Gold',
        metadata,
        'realm',
        'usr_s',
        'G',
        2,
        amount(1500n),
        null,
        null,
        at,
      ]);
      await run(asset, [
        'max',
        2,
        'fungible',
        'Max',
        metadata,
        'realm',
        'usr_s',
        'M',
        0,
        amount(UINT256_MAX),
        amount(UINT256_MAX),
        null,
        at,
      ]);
      await run(asset, [NFT, 3, 'nft', 'Sword', metadata, 'realm', 'usr_s', null, null, null, null, A, at]);
      const holding = 'insert into holding (wallet, asset_id, balance, updated_at) values (?, ?, ?, ?)';
      await run(holding, [A, 'gold', amount(1000n), at]);
      await run(holding, [B, 'gold', amount(500n), at]);
      await run(holding, [A, 'max', amount(UINT256_MAX), at]);
      await run(holding, [A, NFT, amount(1n), at]);

      const stored = () =>
        connection.execute<{ id: string; total_supply: unknown }[]>(
          'select id, total_supply from asset order by id',
        );
      const read = async (columns: string) =>
        (await reads.all<AssetRow>(`select ${columns} from asset a order by a.id`, [])).map((row) =>
          assetFieldsOf(row, reads),
        );
      const storedBefore = await stored();
      const readBefore = await read(OLD_ASSET_COLUMNS);
      expect(readBefore.map((fields) => [fields.id, fields.totalSupply])).toEqual([
        ['gold', 1500n],
        ['max', UINT256_MAX],
        [NFT, null],
      ]);

      // db:check on the database not migrated yet (a restored backup of an older release) reads the
      // supplies where they are.
      const env: Record<string, string> = database.databaseUrl
        ? { DATABASE_URL: database.databaseUrl }
        : { SQLITE_PATH: database.sqlitePath };
      const checkedBefore = await runScript('src/cli/db-check.ts', [], env);
      expect(checkedBefore.stderr).toBe('');
      expect(checkedBefore.code).toBe(0);

      // The migration under test runs first; later ones may follow it.
      expect((await migrate(orm)).slice(0, 1)).toEqual([MIGRATION]);
      // Copied as stored (text on SQLite, numeric on PostgreSQL), the NFT without a row.
      expect(
        await connection.execute('select asset_id, total_supply from asset_supply order by asset_id'),
      ).toEqual(
        storedBefore
          .filter((row) => row.total_supply !== null)
          .map((row) => ({ asset_id: row.id, total_supply: row.total_supply })),
      );
      const columns = await connection.execute<{ name: string }[]>(
        sqlite
          ? "select name from pragma_table_info('asset')"
          : "select column_name as name from information_schema.columns where table_schema = 'public' and table_name = 'asset'",
      );
      expect(columns.map((column) => column.name)).not.toContain('total_supply');
      expect(await read(ASSET_COLUMNS)).toEqual(readBefore);

      // db:check reads the supplies where they now are.
      await handle.close();
      const checked = await runScript('src/cli/db-check.ts', [], env);
      expect(checked.stderr).toBe('');
      expect(checked.code).toBe(0);
      expect(checked.stdout).toContain('ok; 2 currencies: supply = sum of balances; 1 NFTs: one owner each');
      expect(checked.stdout).toBe(checkedBefore.stdout);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await database.drop();
      throw error;
    }

    // Down, on a handle of its own: the column back, with the values it held, and no asset_supply.
    const again = await openDatabase(database);
    try {
      await again.orm.migrator.down({ to: BEFORE });
      const connection = again.orm.em.getConnection();
      const sqlite = kind === 'sqlite';
      const rows = await connection.execute<{ id: string; total_supply: unknown }[]>(
        'select id, total_supply from asset order by id',
      );
      const amount = (value: bigint) => (sqlite ? value.toString().padStart(78, '0') : value.toString());
      expect(rows).toEqual([
        { id: 'gold', total_supply: amount(1500n) },
        { id: 'max', total_supply: amount(UINT256_MAX) },
        { id: NFT, total_supply: null },
      ]);
      const tables = await connection.execute(
        sqlite
          ? "select name from sqlite_master where type = 'table' and name = 'asset_supply'"
          : "select tablename from pg_tables where schemaname = 'public' and tablename = 'asset_supply'",
      );
      expect(tables).toEqual([]);
      // And up again: the same supplies.
      expect((await migrate(again.orm)).slice(0, 1)).toEqual([MIGRATION]);
      expect(
        await connection.execute('select asset_id, total_supply from asset_supply order by asset_id'),
      ).toEqual([
        { asset_id: 'gold', total_supply: amount(1500n) },
        { asset_id: 'max', total_supply: amount(UINT256_MAX) },
      ]);
    } finally {
      await again.close();
      await database.drop();
    }
  }, 120_000); // two db:check processes and three migration runs: 8.5 s alone on PostgreSQL, past 30 s in a CI run on a slow machine
});

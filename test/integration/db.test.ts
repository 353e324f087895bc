import { readdirSync, readlinkSync } from 'node:fs';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { Asset } from '../../src/db/entities/Asset.ts';
import { AssetSupply } from '../../src/db/entities/AssetSupply.ts';
import { Collection } from '../../src/db/entities/Collection.ts';
import { Holding } from '../../src/db/entities/Holding.ts';
import { User } from '../../src/db/entities/User.ts';
import { databaseFunctions, FUNCTIONS_TABLE } from '../../src/db/functions/index.ts';
import { migrate, type Orm } from '../../src/db/orm.ts';
import type { ScratchDatabase } from '../../src/db/scratch-database.ts';
import { SQLITE_MMAP_BYTES } from '../../src/db/sqlite-read-statements.ts';
import { UINT256_MAX } from '../../src/db/types/uint256-range.ts';
import { DB_KINDS, freshDatabase } from '../helpers/db.ts';

describe.each(DB_KINDS)('storage on %s', (kind) => {
  let db: ScratchDatabase;
  let opened: Database;
  let orm: Orm;
  let firstRun: string[];

  beforeAll(async () => {
    db = await freshDatabase(kind);
    opened = await openDatabase(db);
    orm = opened.orm;
    firstRun = await migrate(orm);
    await seedCollection(orm);
  });

  afterAll(async () => {
    await opened.close();
    await db.drop();
  });

  it('applies every committed migration to an empty database, and nothing the second time', async () => {
    expect(firstRun.length).toBeGreaterThan(0);
    expect(await migrate(orm)).toEqual([]);
  });

  it.runIf(kind === 'postgres')('migrates once when several instances start together', async () => {
    const shared = await freshDatabase(kind);
    const instances = await Promise.all([1, 2, 3].map(() => openDatabase(shared)));
    try {
      const runs = await Promise.all(instances.map((instance) => migrate(instance.orm)));
      expect(runs.flat()).toEqual(firstRun);
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
      await shared.drop();
    }
  });

  it.runIf(kind === 'postgres')(
    'keeps one database function per ledger write: gats_apply_plan alone',
    async () => {
      const rows = await orm.em
        .getConnection()
        .execute<{ proname: string }[]>(
          "select proname from pg_proc where pronamespace = 'public'::regnamespace and proname like 'gats%' order by proname",
        );
      expect(rows.map((row) => row.proname)).toEqual(['gats_apply_plan']);
    },
  );

  it.runIf(kind === 'postgres')(
    'installs each database function as its file in src/db/functions says (pg_get_functiondef), checksum recorded',
    async () => {
      const files = databaseFunctions();
      expect(files.map((fn) => fn.name)).toEqual(['gats_apply_plan']);
      for (const fn of files) {
        expect(await installedDefinition(orm, fn.name)).toEqual(functionDefinition(fn.sql));
      }
      const recorded = await orm.em
        .getConnection()
        .execute<{ name: string; checksum: string }[]>(
          `select "name", "checksum" from "${FUNCTIONS_TABLE}" order by "name"`,
        );
      expect(recorded).toEqual(files.map(({ name, checksum }) => ({ name, checksum })));
    },
  );

  it.runIf(kind === 'postgres')(
    'applies a function file again when its checksum differs from the recorded one, and only then',
    async () => {
      const connection = orm.em.getConnection();
      const [file] = databaseFunctions();
      const other =
        'create or replace function "gats_apply_plan"(p jsonb, p_outbox_lock bigint) returns jsonb language plpgsql as $body$ begin return null; end $body$';
      await connection.execute(other);
      // The recorded checksum is the file's: nothing to apply (a function is not compared at each start).
      expect(await migrate(orm)).toEqual([]);
      expect(await installedDefinition(orm, file.name)).toEqual(functionDefinition(other));
      // The file changed since it was applied (here: the record says so): applied again.
      await connection.execute(`update "${FUNCTIONS_TABLE}" set "checksum" = 'stale' where "name" = ?`, [
        file.name,
      ]);
      expect(await migrate(orm)).toEqual([]);
      expect(await installedDefinition(orm, file.name)).toEqual(functionDefinition(file.sql));
      const [row] = await connection.execute<{ checksum: string }[]>(
        `select "checksum" from "${FUNCTIONS_TABLE}" where "name" = ?`,
        [file.name],
      );
      expect(row.checksum).toBe(file.checksum);
    },
  );

  it('leaves a schema that matches the entities exactly', async () => {
    const diff = await orm.schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim()).toBe('');
  });

  it.runIf(kind === 'sqlite')(
    'keeps savepoint journals in memory: a write changing many pages opens no temporary file',
    async () => {
      // Past 64 KiB SQLite spills a savepoint's journal to a file in the temporary directory, unless
      // temp_store = memory (every transfer changes ~17 pages inside a savepoint of the group commit).
      const sqlite = (await orm.em.getConnection().getNativeClient()) as { exec(sql: string): void };
      /** SQLite's temporary files (named etilqs_*) this process has open. */
      const temporaryFiles = () =>
        readdirSync('/proc/self/fd')
          .map((fd) => {
            try {
              return readlinkSync(`/proc/self/fd/${fd}`);
            } catch {
              return ''; // closed meanwhile (the directory listing's own descriptor)
            }
          })
          .filter((target) => target.includes('etilqs_'));
      sqlite.exec('create table scratch_pages (id integer primary key, payload blob)');
      try {
        sqlite.exec(
          'with recursive n(i) as (select 1 union all select i + 1 from n where i < 64) ' +
            'insert into scratch_pages (payload) select randomblob(3000) from n',
        );
        sqlite.exec('begin; savepoint changes; update scratch_pages set payload = randomblob(3000)');
        try {
          expect(temporaryFiles()).toEqual([]);
        } finally {
          sqlite.exec('rollback');
        }
      } finally {
        sqlite.exec('drop table scratch_pages');
      }
    },
  );

  it.runIf(kind === 'sqlite')(
    'reads the file through a memory map on the ORM connection and the read-only one',
    async () => {
      // Without it every page a connection's cache misses is a pread and a copy (docs/benchmarks.md,
      // Scale: the large ledger's asset and event reads).
      const mapped = (rows: unknown[]) => Number((rows[0] as { mmap_size: number }).mmap_size);
      const connection = orm.em.getConnection();
      expect(mapped(await connection.execute('pragma mmap_size'))).toBe(SQLITE_MMAP_BYTES);
      expect(mapped(await opened.reads.all('pragma mmap_size', []))).toBe(SQLITE_MMAP_BYTES);
    },
  );

  it('round-trips uint256 amounts exactly', async () => {
    const amounts = [0n, 1n, 2n ** 255n, 10n ** 77n, UINT256_MAX];
    for (const [i, amount] of amounts.entries()) {
      await createAsset(orm, `coin-${i}`, amount);
    }
    const em = orm.em.fork();
    const ids = amounts.map((_, i) => `coin-${i}`);
    const loaded = await em.find(AssetSupply, { asset: { $in: ids } });
    const byId = new Map(loaded.map((row) => [row.asset.id, row.totalSupply]));
    expect(ids.map((id) => byId.get(id))).toEqual(amounts);
  });

  it('orders and compares amounts numerically, not as text', async () => {
    for (const [id, amount] of [
      ['nine', 9n],
      ['ten', 10n],
      ['huge', 2n ** 200n],
    ] as const) {
      await createAsset(orm, `order-${id}`, amount);
    }
    const em = orm.em.fork();
    const ordered = await em.find(
      AssetSupply,
      { asset: { $in: ['order-nine', 'order-ten', 'order-huge'] }, totalSupply: { $gte: 10n } },
      { orderBy: { totalSupply: 'asc' } },
    );
    expect(ordered.map((row) => row.asset.id)).toEqual(['order-ten', 'order-huge']);
  });

  it('refuses amounts outside the uint256 range', async () => {
    await expect(createAsset(orm, 'negative', -1n)).rejects.toThrow(RangeError);
    await expect(createAsset(orm, 'too-big', UINT256_MAX + 1n)).rejects.toThrow(RangeError);
  });

  it('indexes the transfers and assets only as their reads need (issue 34: bytes per holding)', async () => {
    // Every index costs bytes and a page written per row: none on a foreign key no read selects by
    // (asset.creator_id, transfer.requested_by_id), none on transfer.asset_id alone ((asset_id, seq)
    // serves it), on either database (MikroORM would index every foreign key on SQLite); asset_supply
    // has its primary key only.
    const sql =
      kind === 'sqlite'
        ? "select name from sqlite_master where type = 'index' and tbl_name in ('asset', 'asset_supply', 'transfer') " +
          "and name not like 'sqlite_autoindex_%' order by name"
        : "select indexname as name from pg_indexes where schemaname = 'public' and tablename in ('asset', 'asset_supply', 'transfer') " +
          "and indexname not like '%_pkey' order by name";
    const rows = await orm.em.getConnection().execute<{ name: string }[]>(sql);
    expect(rows.map((row) => row.name)).toEqual([
      'asset_collection_id_index',
      'asset_expires_at_index',
      'asset_minted_to_mint_seq_index',
      'asset_owner_index',
      'asset_seq_unique',
      'transfer_asset_id_seq_index',
      'transfer_from_address_seq_index',
      'transfer_seq_unique',
      'transfer_to_address_seq_index',
    ]);
  });

  it('allows one holding per (wallet, asset)', async () => {
    await createAsset(orm, 'gold', 100n);
    const wallet = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed';
    const em = orm.em.fork();
    em.create(Holding, { wallet, asset: 'gold', balance: 1n, updatedAt: new Date() });
    await em.flush();
    const other = orm.em.fork();
    other.create(Holding, { wallet, asset: 'gold', balance: 2n, updatedAt: new Date() });
    await expect(other.flush()).rejects.toBeInstanceOf(UniqueConstraintViolationException);
  });
});

/**
 * A function definition as PostgreSQL prints it (`pg_get_functiondef`) or as its file writes it,
 * reduced to what both must share: the header before the body (comments dropped, lower case,
 * identifiers unquoted and without the schema, one space between words) and the body, verbatim.
 */
function functionDefinition(sql: string): { header: string; body: string } {
  const open = /\$[a-z_]*\$/i.exec(sql);
  if (!open) throw new Error('no dollar-quoted body');
  const start = open.index + open[0].length;
  const end = sql.indexOf(open[0], start);
  const header = sql
    .slice(0, open.index)
    .replace(/--[^\n]*/g, '')
    .toLowerCase()
    .replaceAll('"', '')
    .replaceAll('public.', '')
    .replace(/\s+/g, ' ')
    .trim();
  return { header, body: sql.slice(start, end) };
}

async function installedDefinition(orm: Orm, name: string): Promise<{ header: string; body: string }> {
  const [row] = await orm.em
    .getConnection()
    .execute<{ definition: string }[]>('select pg_get_functiondef(?::regproc) as definition', [name]);
  return functionDefinition(row.definition);
}

async function seedCollection(orm: Orm): Promise<void> {
  const em = orm.em.fork();
  const studio = em.create(User, {
    id: 'usr_studio',
    username: 'Studio',
    usernameNormalized: 'studio',
    passwordHash: 'x',
    role: 'studio',
    createdAt: new Date(),
  });
  em.create(Collection, { id: 'demo', name: 'Demo', owner: studio, createdAt: new Date() });
  await em.flush();
}

/** The `seq` of the assets these tests create (the ledger store draws it from a counter). */
let lastAssetSeq = 0;

async function createAsset(orm: Orm, id: string, totalSupply: bigint): Promise<void> {
  await orm.em.fork().transactional(async (em) => {
    em.create(Asset, {
      id,
      seq: ++lastAssetSeq,
      kind: 'fungible',
      name: id,
      metadata: {},
      collection: 'demo',
      creator: 'usr_studio',
      decimals: 0,
      createdAt: new Date(),
    });
    // A currency's supply has a row of its own (issue 34 item 5).
    em.create(AssetSupply, { asset: id, totalSupply });
  });
}

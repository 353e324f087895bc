// 15.6: a database created by the first released schema (Migration20261122000000_initial), holding
// data, upgrades to today's schema on both databases: the data survives, the invariants hold, and
// the service keeps working on it (a transfer continues the old transfer numbering; the old NFT's
// mint is in its owner's history).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/auth/passwords.ts';
import { openDatabase } from '../../src/db/database.ts';
import { migrate, type Orm } from '../../src/db/orm.ts';
import type { ScratchDatabase } from '../../src/db/scratch-database.ts';
import { encodeCursor } from '../../src/domain/ledger/cursor.ts';
import { DB_KINDS, startTestApp } from '../helpers/app.ts';
import { runScript } from '../helpers/commands.ts';
import { freshDatabase } from '../helpers/db.ts';

const FIRST_SCHEMA = 'Migration20261122000000_initial';
const PASSWORD = 'an-old-studio-password';
const OWNER = '0x00000000000000000000000000000000000000a1';
const OTHER = '0x00000000000000000000000000000000000000b2';
const ZERO = '0x0000000000000000000000000000000000000000';
const NFT = 'nft_01M80000000000000000000000';

/** What the first release wrote: a studio, its custodial wallet, a currency, an NFT, their events. */
async function writeFirstReleaseData(orm: Orm, kind: string): Promise<void> {
  const connection = orm.em.getConnection();
  const at = kind === 'sqlite' ? Date.now() : new Date().toISOString();
  const run = (sql: string, params: unknown[]) => connection.execute(sql, params);
  await run(
    'insert into users (id, username, username_normalized, password_hash, role, created_at) values (?, ?, ?, ?, ?, ?)',
    ['usr_old', 'OldStudio', 'oldstudio', await hashPassword(PASSWORD), 'studio', at],
  );
  await run(
    'insert into wallet (address, user_id, kind, encrypted_private_key, created_at) values (?, ?, ?, ?, ?)',
    [OWNER, 'usr_old', 'custodial', null, at],
  );
  await run('insert into collection (id, name, description, owner_id, created_at) values (?, ?, ?, ?, ?)', [
    'old-world',
    'Old World',
    null,
    'usr_old',
    at,
  ]);
  const metadata = JSON.stringify({
    image: 'https://cdn.example.com/old.png',
    attributes: [],
    creator: 'Old',
  });
  const asset =
    'insert into asset (id, seq, kind, name, description, metadata, collection_id, creator_id, symbol, decimals, total_supply, max_supply, owner, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
  await run(asset, [
    'oldgold',
    1,
    'fungible',
    'Old Gold',
    null,
    metadata,
    'old-world',
    'usr_old',
    'OLD',
    2,
    '100000',
    null,
    null,
    at,
  ]);
  await run(asset, [
    NFT,
    2,
    'nft',
    'Old Sword',
    null,
    metadata,
    'old-world',
    'usr_old',
    null,
    null,
    null,
    null,
    OWNER,
    at,
  ]);
  const holding = 'insert into holding (wallet, asset_id, balance, updated_at) values (?, ?, ?, ?)';
  await run(holding, [OWNER, 'oldgold', '100000', at]);
  await run(holding, [OWNER, NFT, '1', at]);
  await run(
    'insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, failure_reason, requested_by_id, created_at, completed_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ['trf_old', 1, 'oldgold', ZERO, OWNER, '100000', 'completed', null, 'usr_old', at, at],
  );
  await run('insert into sequence_counter (name, value) values (?, ?), (?, ?)', ['asset', 2, 'transfer', 1]);
  const event =
    'insert into outbox_event (type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet) values (?, ?, ?, ?, ?, ?, ?, ?)';
  await run(event, [
    'newNFT',
    at,
    JSON.stringify({ id: NFT }),
    NFT,
    'old-world',
    JSON.stringify([OWNER]),
    null,
    OWNER,
  ]);
  await run(event, [
    'newTransfer',
    at,
    JSON.stringify({ id: 'trf_old' }),
    'oldgold',
    'old-world',
    JSON.stringify([OWNER]),
    ZERO,
    OWNER,
  ]);
}

describe.each(DB_KINDS)('upgrade from the first released schema on %s', (kind) => {
  let database: ScratchDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await freshDatabase(kind);
    env = database.databaseUrl
      ? { DATABASE_URL: database.databaseUrl }
      : { SQLITE_PATH: database.sqlitePath };
  });
  afterAll(() => database.drop());

  it('15.6: migrates a first-release database with data to today, invariants intact', async () => {
    const db = await openDatabase(database);
    const orm = db.orm;
    try {
      expect((await orm.migrator.up({ to: FIRST_SCHEMA })).map((m) => m.name)).toEqual([FIRST_SCHEMA]);
      await writeFirstReleaseData(orm, kind);
      const applied = await migrate(orm);
      expect(applied.length).toBeGreaterThan(0);
      expect(applied).not.toContain(FIRST_SCHEMA);
      expect(await orm.migrator.getPending()).toEqual([]);
      // Issue 34: on PostgreSQL the NFT's newest event bounds its event reads
      // (Migration20261130223457_asset_last_event fills it from the log); SQLite keeps none.
      const bounds = await orm.em
        .getConnection()
        .execute<{ asset_id: string; event_id: string | number }[]>(
          'select asset_id, event_id from asset_last_event',
        );
      expect(bounds.map((row) => [row.asset_id, Number(row.event_id)])).toEqual(
        kind === 'postgres' ? [[NFT, 1]] : [],
      );
      // And each wallet's as `from` or `to` (Migration20261201073317_wallet_last_event), the zero
      // address (the currency mint's `from`) left out.
      const walletBounds = await orm.em
        .getConnection()
        .execute<{ wallet: string; event_id: string | number }[]>(
          'select wallet, event_id from wallet_last_event',
        );
      expect(walletBounds.map((row) => [row.wallet, Number(row.event_id)])).toEqual(
        kind === 'postgres' ? [[OWNER, 2]] : [],
      );
    } finally {
      await db.close();
    }
    const checked = await runScript('src/cli/db-check.ts', [], env);
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toContain(
      'ok; 1 currencies: supply = sum of balances; 1 NFTs: one owner each; outbox: 2 events, ids 1..2 without gaps',
    );
  });

  it('15.6: the service serves the upgraded data: the old studio signs in and transfers, numbering continues', async () => {
    const t = await startTestApp(
      kind,
      { SQLITE_PATH: database.sqlitePath },
      database.databaseUrl ? { databaseUrl: database.databaseUrl } : {},
    );
    try {
      const login = await t.http('POST', '/api/v1/auth/login', {
        body: { username: 'oldstudio', password: PASSWORD },
      });
      expect(login.status).toBe(200);
      const bearer = { authorization: `Bearer ${login.body.access_token}` };
      const key = await t.http('POST', '/api/v1/api-keys', {
        body: { name: 'after upgrade' },
        headers: bearer,
      });
      const headers = { ...bearer, 'x-api-key': key.body.key };
      const sent = await t.http('POST', '/api/v1/transfer', {
        body: { assetId: 'oldgold', from: OWNER, to: OTHER, amount: '2.50' },
        headers,
      });
      expect(sent.status).toBe(201);
      const holdings = await t.http('GET', `/wallets/${OTHER}/assets`, { headers });
      expect(holdings.body.data).toEqual([expect.objectContaining({ balance: '2.5' })]);
      // Issue 37: the old NFT, which never moved, was minted to its owner (Migration20261129143100):
      // its mint is in the owner's history, below every transfer. (Read around `trf_old`, whose
      // hand-written id the contract's `tr_` pattern refuses.)
      const history = async (query: string) => {
        const response = await t.http('GET', `/api/v1/transfers?wallet=${OWNER}${query}`, { headers });
        expect(response.status, response.text).toBe(200);
        return response.body;
      };
      expect((await history('&limit=1')).data.map((entry: { id: string }) => entry.id)).toEqual([
        sent.body.id,
      ]);
      const [old] = await t.app.orm.em
        .getConnection()
        .execute<{ seq: string | number }[]>(`select seq from transfer where id = 'trf_old'`);
      const belowOld = await history(`&cursor=${encodeCursor('transfers', Number(old.seq))}`);
      expect(belowOld).toEqual({
        data: [expect.objectContaining({ id: `tr_${NFT.slice('nft_'.length)}`, assetId: NFT, from: ZERO })],
        next_cursor: null,
      });
      const rows = await t.app.orm.em
        .getConnection()
        .execute<{ id: string; seq: string | number }[]>('select id, seq from transfer order by seq');
      expect(
        rows.map((row: { id: string; seq: string | number }) => [row.id === 'trf_old', Number(row.seq)]),
      ).toEqual([
        [true, 1],
        [false, 2],
      ]);
    } finally {
      await t.close();
    }
    const checked = await runScript('src/cli/db-check.ts', [], env);
    expect(checked.stdout).toContain('outbox: 3 events, ids 1..3 without gaps');
  });
});

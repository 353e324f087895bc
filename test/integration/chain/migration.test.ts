// The migrations of this release's event types on a database holding events: SQLite rebuilds
// outbox_event to drop its type CHECK (Migration20261124202625_economy_flags_trades_versions), and must
// keep the rows and the id sequence (an id that retention deleted is never drawn again, or a client
// resuming after it would miss events); both databases then take the new types (assetUpdated, and the
// advisory chainTransferPending and chainTransferRemoved of Migration20261124202648).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { migrate, type Orm } from '../../../src/db/orm.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { DB_KINDS, freshDatabase } from '../../helpers/db.ts';

const BEFORE = 'Migration20261124181607_chain_projection';
const WALLET = '0x00000000000000000000000000000000000000a1';

describe.each(DB_KINDS)('event type migrations on %s', (kind) => {
  let database: ScratchDatabase;
  let opened: Database;
  let orm: Orm;
  beforeAll(async () => {
    database = await freshDatabase(kind);
    opened = await openDatabase(database);
    orm = opened.orm;
  });
  afterAll(async () => {
    await opened.close();
    await database.drop();
  });

  const insert = (type: string) =>
    orm.em
      .getConnection()
      .execute(
        'insert into outbox_event (type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet) values (?, ?, ?, ?, ?, ?, ?, ?)',
        [type, new Date().toISOString(), '{}', 'gold', null, JSON.stringify([WALLET]), WALLET, WALLET],
      );
  const ids = async () => {
    const rows = await orm.em
      .getConnection()
      .execute<{ id: string | number }[]>('select id from outbox_event order by id');
    return rows.map((row) => Number(row.id));
  };

  it('keeps the events and the id sequence, and takes the new types', async () => {
    await orm.migrator.up({ to: BEFORE });
    for (let i = 0; i < 4; i++) await insert('newTransfer');
    // Retention deleted the newest ones too: the next id must still be 5.
    await orm.em.getConnection().execute('delete from outbox_event where id > 1');
    await migrate(orm);
    expect(await orm.migrator.getPending()).toEqual([]);
    expect(await ids()).toEqual([1]);
    await insert('chainTransferPending');
    await insert('chainTransferRemoved');
    await insert('assetUpdated');
    expect(await ids()).toEqual([1, 5, 6, 7]);
  });
});

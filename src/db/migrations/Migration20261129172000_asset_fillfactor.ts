// Issue 34 item 5 (transfers keep their rate as the ledger grows), PostgreSQL only: a currency's asset
// row is updated at every mint and burn (its total_supply), and every transfer of it reads the row
// twice while it holds the sender's holding lock (the movable guard and the transfer's foreign-key
// check, both FOR KEY SHARE by primary key). On a page filled by the NFT rows inserted after it the
// update cannot stay on the page (not HOT): each one added an entry for the currency to all six
// indexes of asset, and every later lookup of the currency visited them all (measured on a ledger
// grown to 100,000 wallets through the API, autovacuum off: 77 buffers a lookup, against 4 at 1,000
// wallets; docs/architecture/ledger.md). With 10% of each page kept free, a row's update fits on its
// own page, HOT: one index entry whatever the number of supply changes, the page's dead versions
// pruned when it is next read. The setting applies to pages written from now on; an existing
// database keeps its current pages until VACUUM (autovacuum) clears their dead entries.
// SQLite has no fill factor: its b-trees update a row in place.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261129172000_asset_fillfactor extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: { up: [], down: [] },
    postgresql: {
      up: ['alter table "asset" set (fillfactor = 90);'],
      down: ['alter table "asset" reset (fillfactor);'],
    },
  };
}

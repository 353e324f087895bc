// Issue 34 item 5 (transfers keep their rate as the ledger grows), PostgreSQL only: a currency's asset
// row is updated at every mint and burn (its total_supply), and every transfer of it looks the row up
// twice by primary key while it holds the sender's holding (the movable guard and the transfer's
// foreign-key check, both FOR KEY SHARE). On a page filled by the NFT rows inserted after it, the
// update cannot stay on the page (not HOT): it adds an entry for the currency to all six indexes of
// asset, and every later lookup visits them until VACUUM removes them (index scans cannot mark them
// dead: the old versions' xmax is a MultiXact of the transfers' key-share locks). With 10% of each
// page kept free, a supply change stays on its page while the page has room for it; under concurrent
// writes the page is not always pruned in time, so this lowers the count rather than ending it:
// measured on ledgers grown to 100,000 wallets through the API (autovacuum off), 64% -> 85% of the
// asset updates HOT, 75 -> 62 buffers a lookup of the currency (4 at 1,000 wallets, 6 after VACUUM;
// docs/benchmarks.md, "Transfers as the ledger grows"). The setting applies to pages written from
// now on. SQLite has no fill factor: it updates a row in place.
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

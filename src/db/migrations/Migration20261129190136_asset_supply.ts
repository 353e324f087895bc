// Issue 34 item 5 (transfers keep their rate as the ledger grows): a currency's total supply moves
// from its `asset` row to a narrow table of its own, `asset_supply` (one row per currency; NFTs have
// none), so that mints and burns never update the asset row.
//
// Why: every mint and burn updated `asset.total_supply`, and every transfer of the currency looks its
// asset row up twice by primary key while it holds the sender's holding lock (the movable guard and
// the transfer row's foreign-key check, both FOR KEY SHARE). On PostgreSQL an update that cannot stay
// on the row's page (the NFT rows inserted after it fill the page) adds an entry for the currency to
// every index of `asset`, and each lookup visits all of them until VACUUM: at 100,000 wallets a lookup
// touched 62-76 buffers instead of 4-6, and transfers kept only ~0.74 of their rate (issue 34 wants
// >= 0.8; docs/benchmarks.md, "Where a transfer's time goes on PostgreSQL"). Migration20261129172000
// (asset fillfactor 90) shortened that walk; this ends it: the asset row of a currency now changes
// only when its studio edits or freezes it. `asset_supply` keeps half of each page free (PostgreSQL
// fillfactor 50) so that its own updates stay on their page (HOT: no new index entry); its only index
// is its primary key.
//
// Up: create the table, copy every non-null `asset.total_supply` into it, drop the column (SQLite:
// `alter table ... drop column`, which works since no index, constraint or view names the column).
// Down: put the column back (nullable, at the end of the row) and copy the supplies back. The ledger
// function gats_apply_plan (src/db/functions/gats_apply_plan.sql) is not a migration's business: after
// a down, deploy the previous release, whose `migrate()` applies its own text of the function (the
// checksum differs); until then the installed function writes to the dropped `asset_supply`.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261129190136_asset_supply extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'create table `asset_supply` (`asset_id` text not null primary key, `total_supply` text not null, constraint `asset_supply_asset_id_foreign` foreign key (`asset_id`) references `asset` (`id`) on update cascade on delete cascade);',
        // Amounts are zero-padded text (src/db/types/uint256.ts): copied as they are.
        'insert into `asset_supply` (`asset_id`, `total_supply`) select `id`, `total_supply` from `asset` where `total_supply` is not null;',
        'alter table `asset` drop column `total_supply`;',
      ],
      down: [
        'alter table `asset` add column `total_supply` text null;',
        'update `asset` set `total_supply` = (select s.`total_supply` from `asset_supply` s where s.`asset_id` = `asset`.`id`) where `id` in (select `asset_id` from `asset_supply`);',
        'drop table `asset_supply`;',
      ],
    },
    postgresql: {
      up: [
        'create table "asset_supply" ("asset_id" varchar(32) not null, "total_supply" numeric(78,0) not null, primary key ("asset_id")) with (fillfactor = 50);',
        'alter table "asset_supply" add constraint "asset_supply_asset_id_foreign" foreign key ("asset_id") references "asset" ("id") on update cascade on delete cascade;',
        'insert into "asset_supply" ("asset_id", "total_supply") select "id", "total_supply" from "asset" where "total_supply" is not null;',
        'alter table "asset" drop column "total_supply";',
      ],
      down: [
        'alter table "asset" add column "total_supply" numeric(78,0) null;',
        'update "asset" a set "total_supply" = s."total_supply" from "asset_supply" s where s."asset_id" = a."id";',
        'drop table "asset_supply";',
      ],
    },
  };
}

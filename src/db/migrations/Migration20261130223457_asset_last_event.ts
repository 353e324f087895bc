// Issue 34, an NFT's event read on a long PostgreSQL log: `asset_last_event` holds each NFT's newest
// event (src/db/entities/AssetLastEvent.ts); the ledger function writes it with the events from now on
// (src/db/functions/gats_apply_plan.sql) and the read stops there (src/events/reads.ts), so it drops
// the log's partitions after it instead of descending into each one's `(asset_id, id)` index up to
// the relay's position. The generator's statements (the table), then by hand: PostgreSQL first holds
// the event writers (their advisory lock, taken exclusively until the migrations commit:
// Migration20261201073317_wallet_last_event says why), then fills it
// for every NFT from the log (one backward step of `(asset_id, id)` per NFT and partition) and keeps
// a tenth of each page free, so that an NFT's next event updates its row on its page (HOT: no new
// index entry). SQLite: the table only (one log table, no partitions; its store writes none). The
// generator's PostgreSQL `down` also re-created the outbox's partitioning and `gats_apply_plan`;
// removed (neither is this migration's: the function's one home is src/db/functions/).
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261130223457_asset_last_event extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'create table `asset_last_event` (`asset_id` text not null primary key, `event_id` bigint not null);',
      ],
      down: ['drop table if exists `asset_last_event`;'],
    },
    postgresql: {
      up: [
        'select pg_advisory_xact_lock(4242001);',
        'create table "asset_last_event" ("asset_id" varchar(32) not null, "event_id" bigint not null, primary key ("asset_id")) with (fillfactor = 90);',
        `insert into "asset_last_event" ("asset_id", "event_id") select a."id", e."id" from "asset" a cross join lateral (select max(x."id") as "id" from "outbox_event" x where x."asset_id" = a."id") e where a."kind" = 'nft' and e."id" is not null;`,
      ],
      down: ['drop table if exists "asset_last_event" cascade;'],
    },
  };
}

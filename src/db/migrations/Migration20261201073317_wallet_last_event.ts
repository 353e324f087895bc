// Issue 34, a wallet's event read on a long PostgreSQL log: `wallet_last_event` holds each address's
// newest event as `from` or `to` (src/db/entities/WalletLastEvent.ts); the ledger function writes it
// with the events from now on (src/db/functions/gats_apply_plan.sql) and the read's `from` and `to`
// branches stop there (src/events/reads.ts), so they drop the log's partitions after it instead of
// descending into each one's `(from_wallet, id)` and `(to_wallet, id)` indexes up to the relay's
// position. The generator's statements (the table), then by hand: PostgreSQL first waits for the
// event writers in flight and holds new ones until the migration commits (the outbox writers'
// advisory lock, taken exclusively: src/events/outbox-lock.ts, OUTBOX_LOCK_KEY), so that no event
// commits between the fill below and the new text of the function, applied in this transaction
// (src/db/functions/index.ts); then it fills the table from the log (one pass over it; the zero
// address, every currency mint's `from` and every burn's `to`, has no row: its reads have no bound)
// and keeps a tenth of each page free, so that a wallet's next event updates
// its row on its page (HOT: no new index entry). SQLite: the table only (one log table, no
// partitions; its store writes none). The generator's PostgreSQL `down` also re-created the outbox's
// partitioning; removed (not this migration's).
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261201073317_wallet_last_event extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'create table `wallet_last_event` (`wallet` text not null primary key, `event_id` bigint not null);',
      ],
      down: ['drop table if exists `wallet_last_event`;'],
    },
    postgresql: {
      up: [
        'select pg_advisory_xact_lock(4242001);',
        'create table "wallet_last_event" ("wallet" varchar(42) not null, "event_id" bigint not null, primary key ("wallet")) with (fillfactor = 90);',
        `insert into "wallet_last_event" ("wallet", "event_id") select x."wallet", max(x."id") from (select "from_wallet" as "wallet", "id" from "outbox_event" where "from_wallet" is not null union all select "to_wallet", "id" from "outbox_event" where "to_wallet" is not null) x where x."wallet" <> '0x0000000000000000000000000000000000000000' group by x."wallet";`,
      ],
      down: ['drop table if exists "wallet_last_event" cascade;'],
    },
  };
}

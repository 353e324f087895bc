// Written by hand (a schema diff makes no partitions; the entity leaves them unmanaged): issue 34,
// the event log at 100M events. On PostgreSQL `outbox_event` becomes a table partitioned by range of
// id (docs/architecture/events.md, "The log at scale"): retention drops whole partitions instead of
// deleting rows, and every read's `id > ?` prunes the partitions before it.
//
// The existing log is not copied: the table is renamed `outbox_event_p0` and attached as the first
// partition, `[MINVALUE, the last id given + 1)`, of a new partitioned `outbox_event` with the same
// columns, primary key and indexes (ATTACH adopts the old table's matching indexes: no index is
// built). The only cost that grows with the log is ATTACH's proof that every row is in the range: a
// sequential read of the old table under the migration's lock, skipped when the table already has a
// validated check constraint `outbox_event_p0_ids` (`id < N`, N above every id given), which an
// operator may add online before upgrading (docs/operations/upgrades.md). The id sequence moves to
// the new table (it would otherwise be dropped with the first partition), so ids continue. The next
// two partitions' worth of ids get their partitions here, as the keeper (src/db/outbox-partitions.ts,
// at start-up and every 5 minutes) then keeps them: instances of the previous version still writing
// during a rolling upgrade find them. The size of a partition: the `sequence_counter` row
// `outbox-partition-ids` when there is one, else 1,000,000 ids. No default partition: with one,
// PostgreSQL cannot read the partitions in order (an ordered Append) and merges every partition's
// first rows instead.
//
// SQLite has no partitions: nothing to convert (retention deletes by ranges of the primary key).
import { DualPlatformMigration } from '../dual-platform-migration.ts';

const INDEXES = ['type_id', 'asset_id_id', 'collection_id_id', 'from_wallet_id', 'to_wallet_id'];
const COLUMNS: Record<string, string> = {
  type_id: '"type", "id"',
  asset_id_id: '"asset_id", "id"',
  collection_id_id: '"collection_id", "id"',
  from_wallet_id: '"from_wallet", "id"',
  to_wallet_id: '"to_wallet", "id"',
};

const UP = `do $outbox$
declare
  v_last bigint;
  v_bound bigint;
  v_check text;
  v_width bigint;
  v_from bigint;
begin
  lock table "outbox_event" in access exclusive mode;
  -- The last id given: the sequence's, or a stored id past it (a restore's ids are the sequence's too).
  select greatest(coalesce((select max("id") from "outbox_event"), 0),
      (select case when is_called then last_value else 0 end from "outbox_event_id_seq"))
    into v_last;
  alter table "outbox_event" rename to "outbox_event_p0";
  alter table "outbox_event_p0" rename constraint "outbox_event_pkey" to "outbox_event_p0_pkey";
${INDEXES.map((name) => `  alter index "outbox_event_${name}_index" rename to "outbox_event_p0_${name}_index";`).join('\n')}
  create table "outbox_event" (
    "id" bigint not null default nextval('outbox_event_id_seq'),
    "type" text not null,
    "occurred_at" timestamptz not null,
    "data" jsonb not null,
    "asset_id" varchar(32) not null,
    "collection_id" varchar(255) null,
    "wallets" jsonb not null,
    "from_wallet" varchar(42) null,
    "to_wallet" varchar(42) null,
    "operation_id" text null,
    constraint "outbox_event_pkey" primary key ("id")
  ) partition by range ("id");
${INDEXES.map((name) => `  create index "outbox_event_${name}_index" on "outbox_event" (${COLUMNS[name]});`).join('\n')}
  alter sequence "outbox_event_id_seq" owned by "outbox_event"."id";
  alter table "outbox_event_p0" alter column "id" drop default;
  -- A bound proved beforehand (validated online by the operator), else proved here by one read.
  select pg_get_constraintdef(c.oid) into v_check from pg_constraint c
    where c.conrelid = '"outbox_event_p0"'::regclass and c.conname = 'outbox_event_p0_ids' and c.convalidated;
  if v_check is not null then
    v_bound := substring(v_check from '<\\s*\\(?''?(\\d+)')::bigint;
    if v_bound is null or v_bound <= v_last then
      raise exception 'outbox_event_p0_ids (%) must allow every id given (up to %) and no more', v_check, v_last;
    end if;
  else
    v_bound := v_last + 1;
    execute format('alter table "outbox_event_p0" add constraint "outbox_event_p0_ids" check ("id" < %s)', v_bound);
  end if;
  execute format('alter table "outbox_event" attach partition "outbox_event_p0" for values from (minvalue) to (%s)', v_bound);
  alter table "outbox_event_p0" drop constraint "outbox_event_p0_ids";
  select coalesce((select "value" from "sequence_counter" where "name" = 'outbox-partition-ids'), 1000000)
    into v_width;
  v_from := v_bound;
  while v_from <= v_last + 2 * v_width loop
    execute format('create table %I partition of "outbox_event" for values from (%s) to (%s)',
      'outbox_event_p' || v_from, v_from, v_from + v_width);
    v_from := v_from + v_width;
  end loop;
end
$outbox$;`;

const DOWN = `do $outbox$
begin
  lock table "outbox_event" in access exclusive mode;
  create table "outbox_event_flat" (like "outbox_event" including defaults);
  insert into "outbox_event_flat" select * from "outbox_event";
  alter sequence "outbox_event_id_seq" owned by "outbox_event_flat"."id";
  drop table "outbox_event";
  alter table "outbox_event_flat" rename to "outbox_event";
  alter table "outbox_event" add constraint "outbox_event_pkey" primary key ("id");
${INDEXES.map((name) => `  create index "outbox_event_${name}_index" on "outbox_event" (${COLUMNS[name]});`).join('\n')}
end
$outbox$;`;

export class Migration20261129170000_outbox_partitions extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: { up: [], down: [] },
    postgresql: { up: [UP], down: [DOWN] },
  };
}

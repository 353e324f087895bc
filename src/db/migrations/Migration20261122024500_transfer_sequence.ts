// Written by hand: the generator diffs entities, and a sequence is no entity. See db/sequences.ts for
// why transfers take their `seq` from a PostgreSQL sequence while assets keep the counter row.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261122024500_transfer_sequence extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [],
      down: [],
    },
    postgresql: {
      up: [
        'create sequence "transfer_seq" as bigint;',
        // Continue after every value handed out so far (rows, and the counter the sequence replaces).
        `select setval('transfer_seq', greatest(coalesce((select max("seq") from "transfer"), 0), coalesce((select "value" from "sequence_counter" where "name" = 'transfer'), 0)) + 1, false);`,
        `delete from "sequence_counter" where "name" = 'transfer';`,
      ],
      down: [
        `insert into "sequence_counter" ("name", "value") select 'transfer', coalesce(max("seq"), 0) from "transfer" on conflict ("name") do update set "value" = excluded."value";`,
        'drop sequence if exists "transfer_seq";',
      ],
    },
  };
}

// Token metadata is never dropped (finding 30.8, src/chain/metadata.ts): a token's fetch state lives
// in its chain_asset row, not only in the fetcher's memory. `metadata_attempts` counts the fetches
// tried; `metadata_retry_at` is when a pending or retryable failed token is due (or, while a fetcher
// holds it, the end of its claim). The index serves the fetcher's sweep for due tokens.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261128162000_chain_asset_metadata_retry extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'alter table `chain_asset` add column `metadata_attempts` integer not null default 0;',
        'alter table `chain_asset` add column `metadata_retry_at` datetime null;',
        'create index `chain_asset_metadata_status_metadata_retry_at_index` on `chain_asset` (`metadata_status`, `metadata_retry_at`);',
      ],
      down: [
        'drop index `chain_asset_metadata_status_metadata_retry_at_index`;',
        'alter table `chain_asset` drop column `metadata_retry_at`;',
        'alter table `chain_asset` drop column `metadata_attempts`;',
      ],
    },
    postgresql: {
      up: [
        'alter table "chain_asset" add "metadata_attempts" int not null default 0, add "metadata_retry_at" timestamptz null;',
        'create index "chain_asset_metadata_status_metadata_retry_at_index" on "chain_asset" ("metadata_status", "metadata_retry_at");',
      ],
      down: [
        'drop index "chain_asset_metadata_status_metadata_retry_at_index";',
        'alter table "chain_asset" drop column "metadata_attempts", drop column "metadata_retry_at";',
      ],
    },
  };
}

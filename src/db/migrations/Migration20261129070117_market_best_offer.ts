// Written by hand (the generator does not write partial indexes): a collection's best offer (issue
// 35) walks its collection offers (`asset_id` null) from the highest price, one index read however
// many item offers the collection has. The index is partial because PostgreSQL walks no index in
// order past an `IS NULL` column; it replaces the index of every offer by collection, which nothing
// else read and which made PostgreSQL walk the item offers too, filtering them out. The generator's PostgreSQL `down` also
// re-created `gats_apply_plan`; removed (its one home is src/db/functions/).
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261129070117_market_best_offer extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'drop index `offer_collection_id_status_currency_id_price_id_index`;',
        'create index "offer_collection_offer_price_index" on "offer" ("collection_id", "status", "currency_id", "price", "id") where "asset_id" is null;',
      ],
      down: [
        'drop index "offer_collection_offer_price_index";',
        'create index `offer_collection_id_status_currency_id_price_id_index` on `offer` (`collection_id`, `status`, `currency_id`, `price`, `id`);',
      ],
    },
    postgresql: {
      up: [
        'drop index "offer_collection_id_status_currency_id_price_id_index";',
        'create index "offer_collection_offer_price_index" on "offer" ("collection_id", "status", "currency_id", "price", "id") where "asset_id" is null;',
      ],
      down: [
        'drop index "offer_collection_offer_price_index";',
        'create index "offer_collection_id_status_currency_id_price_id_index" on "offer" ("collection_id", "status", "currency_id", "price", "id");',
      ],
    },
  };
}

// Written by hand after the entity (src/db/entities/ListingTrait.ts), issue 35: the trait floor read
// from one index. `listing_trait` holds one row per attribute value of each ACTIVE listing's item,
// with the listing's collection, currency, price and expiry; the ledger store writes it with the
// listing and deletes it when the listing closes. `up` also fills it for the listings active now,
// from their items' current `metadata.attributes` (a string, number or boolean value as its text, as
// trait offers name it; type and value too long to be asked for, over 100 and 500 characters, left
// out, as the store does). The fill is SQL, not the generator's: a migration has no domain code.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

export class Migration20261129143000_listing_traits extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'create table `listing_trait` (`listing_id` text not null, `trait_type` text not null, `trait_value` text not null, `collection_id` text not null, `currency_id` text not null, `price` text not null, `expires_at` datetime null, primary key (`listing_id`, `trait_type`, `trait_value`));',
        'create index `listing_trait_floor_index` on `listing_trait` (`collection_id`, `trait_type`, `trait_value`, `currency_id`, `price`, `listing_id`);',
        // CASE, not AND: SQLite does not promise to test `a.type` before reading a non-object as JSON.
        'insert or ignore into `listing_trait` (`listing_id`, `trait_type`, `trait_value`, `collection_id`, `currency_id`, `price`, `expires_at`) ' +
          'select l.`id`, t.`trait_type`, t.`trait_value`, l.`collection_id`, l.`currency_id`, l.`price`, l.`expires_at` from `listing` l join (' +
          "select s.`id` as `asset_id`, case when a.`type` = 'object' then case when json_type(a.`value`, '$.trait_type') = 'text' then json_extract(a.`value`, '$.trait_type') end end as `trait_type`, " +
          "case when a.`type` = 'object' then case json_type(a.`value`, '$.value') when 'true' then 'true' when 'false' then 'false' when 'text' then json_extract(a.`value`, '$.value') " +
          "when 'integer' then cast(json_extract(a.`value`, '$.value') as text) when 'real' then cast(json_extract(a.`value`, '$.value') as text) end end as `trait_value` " +
          "from `asset` s, json_each(case when json_type(s.`metadata`, '$.attributes') = 'array' then json_extract(s.`metadata`, '$.attributes') else '[]' end) a" +
          ') t on t.`asset_id` = l.`asset_id` ' +
          "where l.`status` = 'active' and t.`trait_type` is not null and t.`trait_value` is not null and length(t.`trait_type`) <= 100 and length(t.`trait_value`) <= 500;",
      ],
      down: ['drop table if exists `listing_trait`;'],
    },
    postgresql: {
      up: [
        'create table "listing_trait" ("listing_id" varchar(32) not null, "trait_type" varchar(100) not null, "trait_value" varchar(500) not null, "collection_id" varchar(255) not null, "currency_id" varchar(32) not null, "price" numeric(78,0) not null, "expires_at" timestamptz null, primary key ("listing_id", "trait_type", "trait_value"));',
        'create index "listing_trait_floor_index" on "listing_trait" ("collection_id", "trait_type", "trait_value", "currency_id", "price", "listing_id");',
        `insert into "listing_trait" ("listing_id", "trait_type", "trait_value", "collection_id", "currency_id", "price", "expires_at") select l."id", t."trait_type", t."trait_value", l."collection_id", l."currency_id", l."price", l."expires_at" from "listing" l join (select s."id" as "asset_id", a->>'trait_type' as "trait_type", a->>'value' as "trait_value" from "asset" s, jsonb_array_elements(case when jsonb_typeof(s."metadata"->'attributes') = 'array' then s."metadata"->'attributes' else '[]'::jsonb end) a where jsonb_typeof(a->'trait_type') = 'string' and jsonb_typeof(a->'value') in ('string', 'number', 'boolean')) t on t."asset_id" = l."asset_id" where l."status" = 'active' and length(t."trait_type") <= 100 and length(t."trait_value") <= 500 on conflict do nothing;`,
      ],
      down: ['drop table if exists "listing_trait";'],
    },
  };
}

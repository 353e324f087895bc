// Written by hand: the generator diffs entities, and a function is no entity. On PostgreSQL a transfer
// is one call of `gats_apply_transfer` (see src/domain/ledger/transfers.ts for the rules and the
// SQLite side): one round trip in its own transaction instead of a dozen statements between BEGIN
// and COMMIT. The function holds no logic of its own beyond the statements a transfer runs, in order.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

/**
 * Raises SQLSTATE GT403 (the caller does not control `from`) or GT409 (`from` holds less than the
 * amount; DETAIL is what it holds), each rolling back everything; returns null when the transfer is
 * applied, or the idempotency record that already holds the key (nothing changed then).
 */
export const APPLY_TRANSFER = `create function "gats_apply_transfer"(
  p_record_id varchar, p_request_hash varchar, p_expires_at timestamptz, p_response_body jsonb,
  p_response_headers jsonb, p_user_id varchar, p_asset_id varchar, p_nft boolean, p_from varchar,
  p_to varchar, p_amount numeric, p_transfer_id varchar, p_now timestamptz, p_event_data jsonb,
  p_collection_id varchar, p_from_wallet varchar, p_to_wallet varchar, p_outbox_lock bigint
) returns jsonb language plpgsql as $body$
declare
  existing record;
  holding_row record;
  held numeric;
begin
  -- The idempotency record first, with the answer: a concurrent request with the same key waits
  -- here for this transaction, then finds the record (or, if this one rolled back, takes the key).
  if p_record_id is not null then
    insert into "idempotency_record" ("id", "request_hash", "status", "response_body", "response_headers", "created_at", "expires_at")
      values (p_record_id, p_request_hash, 201, p_response_body, p_response_headers, p_now, p_expires_at)
      on conflict ("id") do nothing;
    if not found then
      select r."request_hash", r."status", r."response_body", r."response_headers", r."expires_at"
        into existing from "idempotency_record" r where r."id" = p_record_id;
      if not found then
        raise exception 'idempotency record vanished; try again' using errcode = '40001';
      end if;
      if existing."expires_at" > p_now then
        return jsonb_build_object('request_hash', existing."request_hash", 'status', existing."status",
          'response_body', existing."response_body", 'response_headers', existing."response_headers");
      end if;
      -- An expired record protects nothing: replace it (a concurrent replacement makes this fail
      -- with a unique violation, and the caller then replays the winner).
      delete from "idempotency_record" where "id" = p_record_id and "expires_at" <= p_now;
      insert into "idempotency_record" ("id", "request_hash", "status", "response_body", "response_headers", "created_at", "expires_at")
        values (p_record_id, p_request_hash, 201, p_response_body, p_response_headers, p_now, p_expires_at);
    end if;
  end if;

  perform 1 from "wallet" where "address" = p_from and "user_id" = p_user_id;
  if not found then
    raise exception 'wallet not controlled' using errcode = 'GT403';
  end if;

  -- Both holdings locked in address order, so opposite transfers cannot deadlock.
  for holding_row in
    select "wallet", "balance" from "holding"
      where "asset_id" = p_asset_id and "wallet" in (p_from, p_to) order by "wallet" for update
  loop
    if holding_row."wallet" = p_from then held := holding_row."balance"; end if;
  end loop;
  if held is null or held < p_amount then
    raise exception 'insufficient balance' using errcode = 'GT409', detail = coalesce(held, 0)::text;
  end if;
  update "holding" set "balance" = "balance" - p_amount, "updated_at" = p_now
    where "asset_id" = p_asset_id and "wallet" = p_from;
  insert into "holding" ("wallet", "asset_id", "balance", "updated_at") values (p_to, p_asset_id, p_amount, p_now)
    on conflict ("wallet", "asset_id") do update
    set "balance" = "holding"."balance" + excluded."balance", "updated_at" = excluded."updated_at";
  if p_nft then
    update "asset" set "owner" = p_to where "id" = p_asset_id;
  end if;

  insert into "transfer" ("id", "seq", "asset_id", "from_address", "to_address", "amount", "status",
      "failure_reason", "requested_by_id", "created_at", "completed_at")
    values (p_transfer_id, nextval('transfer_seq'), p_asset_id, p_from, p_to, p_amount, 'completed',
      null, p_user_id, p_now, p_now);

  -- The outbox writer's shared lock, held to commit, before the event draws its id
  -- (src/events/outbox-lock.ts).
  perform pg_advisory_xact_lock_shared(p_outbox_lock);
  insert into "outbox_event" ("type", "occurred_at", "data", "asset_id", "collection_id", "wallets",
      "from_wallet", "to_wallet")
    values ('newTransfer', p_now, p_event_data, p_asset_id, p_collection_id,
      jsonb_build_array(p_from_wallet, p_to_wallet), p_from_wallet, p_to_wallet);
  return null;
end
$body$;`;

export const DROP_APPLY_TRANSFER =
  'drop function if exists "gats_apply_transfer"(varchar, varchar, timestamptz, jsonb, jsonb, varchar, varchar, boolean, varchar, varchar, numeric, varchar, timestamptz, jsonb, varchar, varchar, varchar, bigint);';

export class Migration20261122043000_apply_transfer_function extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [],
      down: [],
    },
    postgresql: {
      up: [APPLY_TRANSFER],
      down: [DROP_APPLY_TRANSFER],
    },
  };
}

-- gats_apply_plan: on PostgreSQL every ledger write is one call of this function, in its own
-- transaction (src/domain/ledger/store/postgres.ts builds the argument from the domain's plan with
-- `planJson`; src/domain/ledger/store/plan.ts describes the plan). The function decides nothing: it
-- takes the idempotency record, locks what the plan names in a fixed order, evaluates the plan's
-- guards in order and applies the plan's rows.
--
-- This file is the function's one home. `migrate()` (src/db/orm.ts) applies it with
-- `create or replace` after the table migrations whenever its checksum differs from the one recorded
-- in the table database_function (src/db/functions/index.ts), as repeatable migrations do; edit it
-- here, never in a migration. Its argument's keys are checked against `planJson` by
-- test/unit/ledger/plan-wire.test.ts, and the installed function against this file by
-- test/integration/db.test.ts. A change of the signature or of the return type needs a migration
-- that drops the old function first (`create or replace` cannot change them).
--
-- Returns null when the plan is applied, or the idempotency record that already holds the key
-- (nothing changed then). Raises SQLSTATE GTG01 when a guard fails (DETAIL: the guard's index in the
-- plan; HINT: the amount or version found, or the reason word: missing, soulbound, frozen, or a
-- trade's or a listing's closed status, expired, lent) and GTN01 when a change would take a balance below zero (DETAIL:
-- asset and wallet), each rolling back everything.
--
-- Locks, always in this order so that no two plans wait on each other in a cycle: the idempotency
-- record (its unique key), the assets the plan updates or whose version it checks (`asset_locks`),
-- the supply rows (asset_supply) of the currencies whose supply the plan reads or changes
-- (`supply_locks`), the holdings it reads or changes (`locks`), each list sorted by the caller, then
-- the rows its inserts and updates touch, the counters last, the outbox writers' shared lock
-- (src/events/outbox-lock.ts, its key is the second argument) right before the event rows draw their
-- ids, then the rows of asset_last_event of the NFTs the events name, then those of wallet_last_event
-- of the wallets they name as `from` or `to` (each sorted here).
--
-- Guards: one WHEN block per kind, evaluated in the plan's order against the state before the plan;
-- a new kind is one more WHEN block. Every part is optional: an absent part is an empty loop, at the
-- cost of one absent-key lookup. Each part is walked by index (`part->j`, no cursor): measured ~15%
-- less database CPU per transfer than `for ... in select ... from jsonb_to_recordset(...)`
-- (Migration20261124181500_apply_plan_without_cursors).
create or replace function "gats_apply_plan"(p jsonb, p_outbox_lock bigint) returns jsonb
language plpgsql as $body$
declare
  v_at timestamptz := (p->>'at')::timestamptz;
  r jsonb := p->'record';
  existing record;
  part jsonb;
  e jsonb;
  j int;
  held jsonb := '{}';
  -- Each locked holding's reserved part (issue 35), for the reserved guards.
  held_reserved jsonb := '{}';
  v_found numeric;
  v_seq bigint;
  -- The audit trail (issue 37): the hash chained so far, and the next.
  v_hash text;
  v_next text;
  v_row record;
  -- Listings whose status change found them closed already: their `lc` events are not written.
  v_unchanged text[] := '{}';
  -- Issue 36, timed currency grants: the holdings whose lots a transfer took ('asset wallet' ->
  -- {a, w}), those the plan reserves on, and the units a debit still takes or a trim removes.
  v_debited jsonb := '{}';
  v_reserving text[] := '{}';
  -- The holdings ('asset wallet') that have lots (read with their lock) or get some in this plan:
  -- the lots' work is skipped for every other one.
  v_timed text[] := '{}';
  v_need numeric;
  v_units numeric;
  v_lot record;
  -- Issue 34: the plan's events' assets and ids, for each NFT's newest event (after the events).
  v_event_id bigint;
  v_event_assets text[] := '{}';
  v_event_ids bigint[] := '{}';
  -- The addresses the events name as `from` or `to`, and those events' ids (wallet_last_event).
  v_event_wallets text[] := '{}';
  v_wallet_event_ids bigint[] := '{}';
begin
  -- The idempotency record first, with the answer: a concurrent request with the same key waits
  -- here for this transaction, then finds the record (or, if this one rolled back, takes the key).
  if r is not null then
    -- A large answer comes deflated, base64 (`z`, src/db/stored-answer.ts), without `body`.
    insert into "idempotency_record" ("id", "request_hash", "status", "response_body", "response_deflated",
        "response_headers", "created_at", "expires_at")
      values (r->>'id', r->>'hash', (r->>'status')::int, r->'body', decode(r->>'z', 'base64'), r->'headers', v_at,
        (r->>'expires')::timestamptz)
      on conflict ("id") do nothing;
    if not found then
      select x."request_hash", x."status", x."response_body", x."response_deflated", x."response_headers", x."expires_at"
        into existing from "idempotency_record" x where x."id" = r->>'id';
      if not found then
        raise exception 'idempotency record vanished; try again' using errcode = '40001';
      end if;
      if existing."expires_at" > v_at then
        return jsonb_build_object('request_hash', existing."request_hash", 'status', existing."status",
          'response_body', existing."response_body", 'response_deflated', encode(existing."response_deflated", 'base64'),
          'response_headers', existing."response_headers", 'expires_at', existing."expires_at");
      end if;
      -- An expired record protects nothing: replace it (a concurrent replacement makes this fail
      -- with a unique violation; the caller runs the plan again and replays the winner).
      delete from "idempotency_record" where "id" = r->>'id' and "expires_at" <= v_at;
      insert into "idempotency_record" ("id", "request_hash", "status", "response_body", "response_deflated",
          "response_headers", "created_at", "expires_at")
        values (r->>'id', r->>'hash', (r->>'status')::int, r->'body', decode(r->>'z', 'base64'), r->'headers', v_at,
          (r->>'expires')::timestamptz);
    end if;
  end if;

  -- The assets the plan updates or whose version it checks, FOR UPDATE: it conflicts with the FOR KEY
  -- SHARE of the movable and burnable guards, so a freeze and a transfer of the same asset never
  -- both pass on the state before the other.
  part := p->'asset_locks';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    perform 1 from "asset" where "id" = part->>j for update;
  end loop;
  -- A currency's supply is its row in asset_supply (issue 34 item 5), locked there: a mint or a burn
  -- neither locks nor updates the asset row every transfer of the currency looks up (a currency
  -- created by this plan has no row yet; nothing to lock).
  part := p->'supply_locks';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    perform 1 from "asset_supply" where "asset_id" = part->>j for no key update;
  end loop;
  -- Each holding's free balance as locked, for the holds guards ('asset wallet' -> balance less its
  -- reserved part), and its reserved part.
  part := p->'locks';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    select h."balance", h."reserved", exists(select 1 from "currency_lot" l
        where l."wallet" = h."wallet" and l."asset_id" = h."asset_id") as "timed"
      into v_row from "holding" h where h."asset_id" = e->>'a' and h."wallet" = e->>'w' for update of h;
    if found then
      if v_row."timed" then
        v_timed := v_timed || ((e->>'a') || ' ' || (e->>'w'));
      end if;
      held := held || jsonb_build_object((e->>'a') || ' ' || (e->>'w'), v_row."balance" - v_row."reserved");
      held_reserved := held_reserved || jsonb_build_object((e->>'a') || ' ' || (e->>'w'), v_row."reserved");
    end if;
  end loop;

  -- The guards, in order, against the state before the plan: one WHEN block per kind.
  part := p->'guards';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    case e->>'k'
      when 'controls' then
        perform 1 from "wallet" where "address" = e->>'w' and "user_id" = e->>'u';
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text;
        end if;
      when 'holds' then
        -- The caller locks every holding a holds guard names: absent from `held`, it does not exist.
        v_found := coalesce((held->>((e->>'a') || ' ' || (e->>'w')))::numeric, 0);
        -- Issue 36: the units of lots past their end (with `untimed`, of any lot) are never free.
        if ((e->>'a') || ' ' || (e->>'w')) = any(v_timed) then
          v_found := v_found - coalesce((select sum(l."amount") from "currency_lot" l
            where l."asset_id" = e->>'a' and l."wallet" = e->>'w' and (e ? 'untimed' or l."expires_at" <= v_at)), 0);
        end if;
        if v_found < (e->>'n')::numeric then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_found::text;
        end if;
      when 'supply' then
        v_found := null;
        select "total_supply" into v_found from "asset_supply" where "asset_id" = e->>'a';
        v_found := coalesce(v_found, 0);
        if v_found + (e->>'n')::numeric > (e->>'max')::numeric then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_found::text;
        end if;
      when 'asset_absent' then
        perform 1 from "asset" where "id" = e->>'a';
        if found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text;
        end if;
      when 'wallet_absent' then
        perform 1 from "wallet" where "address" = e->>'w';
        if found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text;
        end if;
      when 'movable', 'burnable' then
        -- FOR KEY SHARE (as the foreign-key check of the transfer row takes anyway): waits for a
        -- freeze in flight, then reads the asset as it committed.
        select a."frozen", a."soulbound" or c."soulbound" as "soulbound", a."expires_at", a."lender" into v_row
          from "asset" a join "collection" c on c."id" = a."collection_id"
          where a."id" = e->>'a' for key share of a;
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif e->>'k' = 'movable' and v_row."soulbound" then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'soulbound';
        elsif v_row."frozen" then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'frozen';
        -- Issue 36: past its end time (swept or not) nothing moves it; lent, only the sweep does.
        elsif v_row."expires_at" is not null and v_row."expires_at" <= v_at then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'expired';
        elsif v_row."lender" is not null then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'lent';
        end if;
      when 'trade_open' then
        select "status", "expires_at" into v_row from "trade" where "id" = e->>'t' for update;
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."status" <> 'open' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_row."status";
        elsif v_row."expires_at" <= (e->>'at')::timestamptz then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'expired';
        end if;
      when 'listing_active' then
        select "status", "expires_at" into v_row from "listing" where "id" = e->>'l' for update;
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."status" <> 'active' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_row."status";
        elsif e ? 'at' and v_row."expires_at" is not null and v_row."expires_at" <= (e->>'at')::timestamptz then
          -- Without `at`: the expiry sweep, ending a listing past its expiry.
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'expired';
        end if;
      when 'offer_open' then
        -- Issue 35. Without `at`, a release of the offer's funds: its expiry does not matter.
        select "status", "expires_at" into v_row from "offer" where "id" = e->>'o' for update;
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."status" <> 'open' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_row."status";
        elsif e ? 'at' and v_row."expires_at" is not null and v_row."expires_at" <= (e->>'at')::timestamptz then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'expired';
        end if;
      when 'auction_open' then
        -- Issue 35: a bid (before `ends_at`, against the best bid it read) or, with `ended`, a
        -- settlement (at or after `ends_at`).
        select "status", "ends_at", "best_bid" into v_row from "auction" where "id" = e->>'au' for update;
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."status" <> 'open' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_row."status";
        elsif e ? 'best' and v_row."best_bid" is distinct from (e->>'best')::numeric then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'changed';
        elsif (v_row."ends_at" <= (e->>'at')::timestamptz) <> coalesce((e->>'ended')::boolean, false) then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text,
            hint = case when v_row."ends_at" <= (e->>'at')::timestamptz then 'expired' else 'open' end;
        end if;
      when 'reserved' then
        -- Issue 35: the caller locks the holding, as for holds.
        v_found := coalesce((held_reserved->>((e->>'a') || ' ' || (e->>'w')))::numeric, 0);
        if v_found < (e->>'n')::numeric then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = v_found::text;
        end if;
      when 'asset_version' then
        -- Locked by the asset_locks step. With `f` and `o`, the frozen state and the owner must be
        -- as read too.
        select "metadata_version", "frozen", "owner" into v_row from "asset" where "id" = e->>'a';
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."metadata_version" <> (e->>'v')::int
            or (e ? 'f' and v_row."frozen" <> (e->>'f')::boolean)
            or (e ? 'o' and v_row."owner" is distinct from e->>'o') then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text,
            hint = v_row."metadata_version"::text;
        end if;
      -- ---- Stores (issue 36) ----
      when 'offer_available' then
        -- FOR UPDATE: of two purchases of the offer's last unit, the second reads the first's count.
        select "status", "version", "starts_at", "ends_at", "limit_total", "limit_per_wallet", "sold"
          into v_row from "store_offer" where "id" = e->>'o' for update;
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."status" <> 'active' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'closed';
        elsif v_row."version" <> (e->>'v')::int then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'version';
        elsif v_row."starts_at" is not null and v_row."starts_at" > (e->>'at')::timestamptz then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'notStarted';
        elsif v_row."ends_at" is not null and v_row."ends_at" <= (e->>'at')::timestamptz then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'expired';
        elsif v_row."limit_total" is not null and v_row."sold" + (e->>'q')::int > v_row."limit_total" then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'soldOut';
        elsif v_row."limit_per_wallet" is not null and coalesce((select w."bought" from "store_offer_wallet" w
            where w."offer_id" = e->>'o' and w."wallet" = e->>'w'), 0) + (e->>'q')::int > v_row."limit_per_wallet" then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'walletLimit';
        end if;
      -- ---- Loot boxes and draws (issue 36) ----
      when 'seed_at' then
        -- FOR UPDATE: a wallet's openings (and a reveal) take the seed's nonces one at a time.
        select "wallet", "status", "next_nonce" into v_row from "draw_seed" where "id" = e->>'s' for update;
        if not found or v_row."wallet" <> e->>'w' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."status" <> 'active' then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'revealed';
        elsif v_row."next_nonce" <> (e->>'n')::int then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'nonce';
        end if;
      when 'pity_at' then
        if coalesce((select x."count" from "loot_box_pity" x where x."box_id" = e->>'b' and x."wallet" = e->>'w'), 0)
            <> (e->>'n')::int then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'pity';
        end if;
      -- ---- Items that expire (issue 36) ----
      when 'asset_expiry' then
        -- Locked by the asset_locks step. The end time (`x`, null: none) and, with `o`, the owner as
        -- read; with `due`, the end time is at or before the plan's time.
        select "expires_at", "owner" into v_row from "asset" where "id" = e->>'a';
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."expires_at" is distinct from (e->>'x')::timestamptz
            or (e ? 'o' and v_row."owner" is distinct from e->>'o') then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'changed';
        elsif e ? 'due' and (v_row."expires_at" is null or v_row."expires_at" > v_at) then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'open';
        end if;
      -- ---- Timed currency grants (issue 36) ----
      when 'lot_at' then
        -- The holding it debits is locked by the locks step (a balance change names it).
        select "asset_id", "wallet", "amount", "expires_at" into v_row from "currency_lot" where "id" = e->>'l';
        if not found then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'missing';
        elsif v_row."asset_id" <> e->>'a' or v_row."wallet" <> e->>'w' or v_row."amount" <> (e->>'n')::numeric then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'changed';
        elsif v_row."expires_at" > v_at then
          raise exception 'guard failed' using errcode = 'GTG01', detail = j::text, hint = 'open';
        end if;
      else
        raise exception 'unknown guard %', e->>'k';
    end case;
  end loop;

  part := p->'assets';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    -- The asset counter serializes its writers until they commit (src/db/sequences.ts).
    insert into "sequence_counter" ("name", "value") values ('asset', 1)
      on conflict ("name") do update set "value" = "sequence_counter"."value" + 1 returning "value" into v_seq;
    insert into "asset" ("id", "seq", "kind", "name", "description", "metadata", "collection_id",
        "creator_id", "symbol", "decimals", "max_supply", "owner", "soulbound", "created_at",
        "expires_at", "lender", "minted_to", "mint_seq")
      values (e->>'id', v_seq, e->>'kind', e->>'name', e->>'description', e->'metadata', e->>'collection',
        e->>'creator', e->>'symbol', (e->>'decimals')::int,
        (e->>'max_supply')::numeric, e->>'owner', coalesce((e->>'soulbound')::boolean, false),
        (e->>'created_at')::timestamptz, (e->>'expires_at')::timestamptz, e->>'lender', e->>'minted_to',
        -- Issue 37: a ledger NFT's mint takes its place in its wallet's history from the transfers' counter.
        case when e ? 'minted_to' then nextval('transfer_seq') end);
    -- A currency's supply has a row of its own (issue 34 item 5); an NFT has none.
    if e->>'total_supply' is not null then
      insert into "asset_supply" ("asset_id", "total_supply") values (e->>'id', (e->>'total_supply')::numeric);
    end if;
  end loop;
  part := p->'wallets';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "wallet" ("address", "user_id", "kind", "encrypted_private_key", "created_at")
      values (e->>'address', e->>'user_id', e->>'kind', e->>'key', (e->>'created_at')::timestamptz);
  end loop;
  -- Issue 35: reserved parts before balances (a payment from a reservation releases it, then
  -- debits); 0 <= reserved <= balance always.
  part := p->'reserves';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "holding" set "reserved" = "reserved" + (e->>'d')::numeric, "updated_at" = v_at
      where "asset_id" = e->>'a' and "wallet" = e->>'w'
      returning "balance", "reserved" into v_row;
    if not found or v_row."reserved" < 0 or v_row."reserved" > v_row."balance" then
      raise exception 'negative balance' using errcode = 'GTN01', detail = (e->>'a') || ' ' || (e->>'w');
    end if;
  end loop;
  part := p->'balances';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "holding" ("wallet", "asset_id", "balance", "updated_at") values (e->>'w', e->>'a', (e->>'d')::numeric, v_at)
      on conflict ("wallet", "asset_id") do update
      set "balance" = "holding"."balance" + excluded."balance", "updated_at" = excluded."updated_at"
      returning "balance" - "reserved" into v_found;
    -- Below its reserved part (0 for most holdings) is below what the holding may spend.
    if v_found < 0 then
      raise exception 'negative balance' using errcode = 'GTN01', detail = (e->>'a') || ' ' || (e->>'w');
    end if;
  end loop;
  part := p->'supplies';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "asset_supply" set "total_supply" = "total_supply" + (e->>'d')::numeric where "asset_id" = e->>'a';
  end loop;
  part := p->'owners';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "asset" set "owner" = e->>'o' where "id" = e->>'a';
  end loop;
  part := p->'asset_updates';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    -- An absent key leaves its column as it is.
    update "asset" set
        "name" = case when e ? 'name' then e->>'name' else "name" end,
        "description" = case when e ? 'description' then e->>'description' else "description" end,
        "metadata" = case when e ? 'metadata' then e->'metadata' else "metadata" end,
        "frozen" = coalesce((e->>'frozen')::boolean, "frozen"),
        "frozen_by" = case when e ? 'frozen' then e->>'frozen_by' else "frozen_by" end,
        "soulbound" = coalesce((e->>'soulbound')::boolean, "soulbound"),
        "metadata_version" = coalesce((e->>'version')::int, "metadata_version"),
        -- Issue 36: a loan sets the end time and the lender, a return clears both.
        "expires_at" = case when e ? 'expires_at' then (e->>'expires_at')::timestamptz else "expires_at" end,
        "lender" = case when e ? 'expires_at' then e->>'lender' else "lender" end
      where "id" = e->>'a';
    -- Issue 35: new metadata, new attribute values for the item's active listings' trait rows. Their
    -- listing rows locked first (after the asset, as a move that ends them): a close waiting on one
    -- then deletes the rows written here, and one committed first leaves its listing out of them.
    if e ? 'traits' then
      perform 1 from "listing" where "asset_id" = e->>'a' and "status" = 'active' order by "id"
        for no key update;
      delete from "listing_trait" where "listing_id" in
        (select "id" from "listing" where "asset_id" = e->>'a' and "status" = 'active');
      insert into "listing_trait" ("listing_id", "trait_type", "trait_value", "collection_id", "currency_id",
          "price", "expires_at")
        select l."id", x->>0, x->>1, l."collection_id", l."currency_id", l."price", l."expires_at"
          from "listing" l, jsonb_array_elements(e->'traits') x
          where l."asset_id" = e->>'a' and l."status" = 'active';
    end if;
  end loop;
  part := p->'metadata_versions';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "asset_metadata_version" ("asset_id", "version", "name", "metadata", "changed_by", "changed_at")
      values (e->>'a', (e->>'v')::int, e->>'name', e->'metadata', e->>'u', (e->>'at')::timestamptz);
  end loop;
  part := p->'trades';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "trade" ("id", "status", "proposer_user_id", "proposer_wallet", "counterparty_wallet", "offer",
        "request", "expires_at", "created_at", "updated_at", "operation_id", "closed_by")
      values (e->>'id', e->>'status', e->>'u', e->>'pw', e->>'cw', e->'offer', e->'request',
        (e->>'expires_at')::timestamptz, (e->>'created_at')::timestamptz, (e->>'updated_at')::timestamptz,
        e->>'op', e->>'by');
  end loop;
  part := p->'trade_statuses';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "trade" set "status" = e->>'status', "closed_by" = e->>'by', "operation_id" = e->>'op',
        "updated_at" = (e->>'at')::timestamptz
      where "id" = e->>'t';
  end loop;
  part := p->'listings';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "listing" ("id", "status", "end_reason", "seller_user_id", "seller_wallet", "asset_id",
        "collection_id", "amount", "currency_id", "price", "expires_at", "created_at", "updated_at",
        "operation_id", "closed_by")
      values (e->>'id', 'active', null, e->>'u', e->>'w', e->>'a', e->>'c', (e->>'n')::numeric, e->>'cur',
        (e->>'price')::numeric, (e->>'expires_at')::timestamptz, (e->>'at')::timestamptz,
        (e->>'at')::timestamptz, null, null);
    -- Issue 35: its item's attribute values, for the trait floor (deleted when it closes).
    insert into "listing_trait" ("listing_id", "trait_type", "trait_value", "collection_id", "currency_id",
        "price", "expires_at")
      select e->>'id', x->>0, x->>1, e->>'c', e->>'cur', (e->>'price')::numeric, (e->>'expires_at')::timestamptz
        from jsonb_array_elements(e->'traits') x;
  end loop;
  part := p->'listing_statuses';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    -- Only an active listing closes: a plan that read it active before a sale committed (under READ
    -- COMMITTED its guards saw the old row) must not turn the sale into an end.
    update "listing" set "status" = e->>'status', "end_reason" = e->>'reason', "closed_by" = e->>'by',
        "operation_id" = e->>'op', "updated_at" = (e->>'at')::timestamptz
      where "id" = e->>'l' and "status" = 'active';
    if not found then
      v_unchanged := v_unchanged || (e->>'l');
    end if;
    -- Issue 35: a closed listing has no trait rows (none left if it had closed already).
    delete from "listing_trait" where "listing_id" = e->>'l';
  end loop;
  -- Issue 35: offers.
  part := p->'offers';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "offer" ("id", "status", "bidder_user_id", "bidder_wallet", "asset_id", "collection_id",
        "trait_type", "trait_value", "currency_id", "price", "expires_at", "created_at", "updated_at",
        "operation_id", "sold_asset_id", "closed_by")
      values (e->>'id', 'open', e->>'u', e->>'w', e->>'a', e->>'c', e->>'tt', e->>'tv', e->>'cur', (e->>'price')::numeric,
        (e->>'expires_at')::timestamptz, (e->>'at')::timestamptz, (e->>'at')::timestamptz, null, null, null);
  end loop;
  part := p->'offer_statuses';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "offer" set "status" = e->>'status', "closed_by" = e->>'by', "operation_id" = e->>'op',
        "sold_asset_id" = e->>'sold', "updated_at" = (e->>'at')::timestamptz
      where "id" = e->>'o' and "status" = 'open';
  end loop;
  -- Issue 35: auctions.
  part := p->'auctions';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "auction" ("id", "status", "seller_user_id", "seller_wallet", "asset_id", "collection_id",
        "currency_id", "reserve_price", "min_increment", "ends_at", "extension_seconds", "best_bid",
        "best_bidder", "best_bidder_user_id", "bids", "created_at", "updated_at", "operation_id")
      values (e->>'id', 'open', e->>'u', e->>'w', e->>'a', e->>'c', e->>'cur', (e->>'reserve')::numeric,
        (e->>'step')::numeric, (e->>'ends_at')::timestamptz, (e->>'ext')::int, null, null, null, 0,
        (e->>'at')::timestamptz, (e->>'at')::timestamptz, null);
  end loop;
  part := p->'auction_bids';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "auction" set "best_bid" = (e->>'n')::numeric, "best_bidder" = e->>'w', "best_bidder_user_id" = e->>'u',
        "ends_at" = (e->>'ends_at')::timestamptz, "bids" = "bids" + 1, "updated_at" = (e->>'at')::timestamptz
      where "id" = e->>'au' and "status" = 'open';
  end loop;
  part := p->'auction_statuses';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "auction" set "status" = e->>'status', "operation_id" = e->>'op', "updated_at" = (e->>'at')::timestamptz
      where "id" = e->>'au' and "status" = 'open';
  end loop;
  part := p->'sales';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "sale" ("id", "listing_id", "asset_id", "collection_id", "amount", "currency_id", "price",
        "royalty", "fee", "seller_proceeds", "seller_wallet", "buyer_wallet", "created_at")
      values (e->>'id', e->>'l', e->>'a', e->>'c', (e->>'n')::numeric, e->>'cur', (e->>'price')::numeric,
        (e->>'royalty')::numeric, (e->>'fee')::numeric, (e->>'proceeds')::numeric, e->>'sw', e->>'bw',
        (e->>'at')::timestamptz);
  end loop;
  -- ---- Stores (issue 36) ----
  part := p->'offer_sales';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "store_offer" set "sold" = "sold" + (e->>'q')::int where "id" = e->>'o';
    insert into "store_offer_wallet" ("offer_id", "wallet", "bought") values (e->>'o', e->>'w', (e->>'q')::int)
      on conflict ("offer_id", "wallet") do update set "bought" = "store_offer_wallet"."bought" + excluded."bought";
  end loop;
  part := p->'store_purchases';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "store_purchase" ("id", "offer_id", "version", "collection_id", "wallet", "user_id", "quantity",
        "paid", "pay_to", "granted", "created_at")
      values (e->>'id', e->>'o', (e->>'v')::int, e->>'c', e->>'w', e->>'u', (e->>'q')::int, e->'paid',
        e->>'pay_to', e->'granted', (e->>'at')::timestamptz);
  end loop;
  -- ---- Loot boxes and draws (issue 36) ----
  part := p->'seed_nonces';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "draw_seed" set "next_nonce" = (e->>'n')::int where "id" = e->>'s';
  end loop;
  part := p->'pity_counts';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "loot_box_pity" ("box_id", "wallet", "count") values (e->>'b', e->>'w', (e->>'n')::int)
      on conflict ("box_id", "wallet") do update set "count" = excluded."count";
  end loop;
  part := p->'draws';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "draw" ("id", "box_id", "asset_id", "wallet", "seed_id", "nonce", "data", "created_at")
      values (e->>'id', e->>'b', e->>'a', e->>'w', e->>'s', (e->>'n')::int, e->'data', (e->>'at')::timestamptz);
  end loop;
  part := p->'transfers';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "transfer" ("id", "seq", "asset_id", "from_address", "to_address", "amount", "status",
        "failure_reason", "requested_by_id", "created_at", "completed_at")
      values (e->>'id', nextval('transfer_seq'), e->>'a', e->>'f', e->>'t', (e->>'n')::numeric, 'completed', null,
        e->>'u', (e->>'at')::timestamptz, (e->>'at')::timestamptz);
    -- Issue 36, timed currency grants (docs/architecture/stores-and-rewards.md): the debit takes the
    -- sender's live lots first, soonest end first, and moves them to the receiver (a burn consumes
    -- them); a sweep's burn (`lot`) takes its lot.
    continue when e->>'f' = '0x0000000000000000000000000000000000000000'
      or not (((e->>'a') || ' ' || (e->>'f')) = any(v_timed));
    if e ? 'lot' then
      update "currency_lot" set "amount" = "amount" - least("amount", (e->>'n')::numeric) where "id" = e->>'lot';
      delete from "currency_lot" where "id" = e->>'lot' and "amount" = 0;
      continue;
    end if;
    v_need := (e->>'n')::numeric;
    for v_lot in select l."id", l."amount", l."expires_at", l."source_id" from "currency_lot" l
        where l."asset_id" = e->>'a' and l."wallet" = e->>'f' order by l."expires_at", l."id" loop
      exit when v_need = 0;
      continue when v_lot."expires_at" <= v_at;
      v_units := least(v_need, v_lot."amount");
      update "currency_lot" set "amount" = "amount" - v_units where "id" = v_lot."id";
      delete from "currency_lot" where "id" = v_lot."id" and "amount" = 0;
      v_need := v_need - v_units;
      if e->>'t' <> '0x0000000000000000000000000000000000000000' then
        update "currency_lot" set "amount" = "amount" + v_units
          where "asset_id" = e->>'a' and "wallet" = e->>'t' and "expires_at" = v_lot."expires_at"
            and "source_id" = v_lot."source_id";
        if not found then
          insert into "currency_lot" ("id", "asset_id", "wallet", "amount", "expires_at", "source_id", "created_at")
            values ('lot_' || upper(substr(md5((e->>'id') || ' ' || v_lot."id"), 1, 26)), e->>'a', e->>'t', v_units,
              v_lot."expires_at", v_lot."source_id", v_at);
        end if;
        v_timed := v_timed || ((e->>'a') || ' ' || (e->>'t'));
      end if;
    end loop;
  end loop;
  -- Issue 36: the plan's new lots, then `sum(lots) + reserved <= balance` for every holding the plan
  -- debits or reserves on: a debit no guard covered trims the soonest lots, a reservation past it
  -- fails as a negative balance.
  part := p->'lots';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    update "currency_lot" set "amount" = "amount" + (e->>'n')::numeric
      where "asset_id" = e->>'a' and "wallet" = e->>'w' and "expires_at" = (e->>'x')::timestamptz
        and "source_id" = e->>'src';
    if not found then
      insert into "currency_lot" ("id", "asset_id", "wallet", "amount", "expires_at", "source_id", "created_at")
        values (e->>'id', e->>'a', e->>'w', (e->>'n')::numeric, (e->>'x')::timestamptz, e->>'src', v_at);
    end if;
    v_timed := v_timed || ((e->>'a') || ' ' || (e->>'w'));
  end loop;
  part := p->'balances';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    if (e->>'d')::numeric < 0 then
      v_debited := v_debited || jsonb_build_object((e->>'a') || ' ' || (e->>'w'), jsonb_build_object('a', e->>'a', 'w', e->>'w'));
    end if;
  end loop;
  part := p->'reserves';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    if (e->>'d')::numeric > 0 then
      v_reserving := v_reserving || ((e->>'a') || ' ' || (e->>'w'));
      v_debited := v_debited || jsonb_build_object((e->>'a') || ' ' || (e->>'w'), jsonb_build_object('a', e->>'a', 'w', e->>'w'));
    end if;
  end loop;
  for e in select value from jsonb_each(v_debited) loop
    continue when not (((e->>'a') || ' ' || (e->>'w')) = any(v_timed));
    v_units := coalesce((select sum(l."amount") from "currency_lot" l where l."asset_id" = e->>'a' and l."wallet" = e->>'w'), 0);
    continue when v_units = 0;
    select h."balance", h."reserved" into v_row from "holding" h where h."asset_id" = e->>'a' and h."wallet" = e->>'w';
    v_need := v_units + coalesce(v_row."reserved", 0) - coalesce(v_row."balance", 0);
    continue when v_need <= 0;
    if ((e->>'a') || ' ' || (e->>'w')) = any(v_reserving) then
      raise exception 'negative balance' using errcode = 'GTN01', detail = (e->>'a') || ' ' || (e->>'w');
    end if;
    for v_lot in select l."id", l."amount" from "currency_lot" l
        where l."asset_id" = e->>'a' and l."wallet" = e->>'w' order by l."expires_at", l."id" loop
      exit when v_need <= 0;
      v_units := least(v_need, v_lot."amount");
      update "currency_lot" set "amount" = "amount" - v_units where "id" = v_lot."id";
      delete from "currency_lot" where "id" = v_lot."id" and "amount" = 0;
      v_need := v_need - v_units;
    end loop;
  end loop;
  part := p->'prices';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "price_observation" ("asset_id", "price", "price_scaled", "currency", "source",
        "observed_at", "posted_by_id", "created_at")
      values (e->>'a', e->>'price', (e->>'scaled')::numeric, e->>'currency', e->>'source',
        (e->>'observed_at')::timestamptz, e->>'u', (e->>'created_at')::timestamptz);
  end loop;

  if p ? 'events' or p ? 'changes' then
    -- The outbox writers' shared lock, held to commit, before the rows draw their ids.
    perform pg_advisory_xact_lock_shared(p_outbox_lock);
  end if;
  part := p->'events';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    -- An end announced only if it happened (`lc`: the listing this plan closes).
    continue when e ? 'lc' and (e->>'lc') = any(v_unchanged);
    insert into "outbox_event" ("type", "occurred_at", "data", "asset_id", "collection_id", "wallets",
        "from_wallet", "to_wallet", "operation_id")
      values (e->>'type', (e->>'occurred_at')::timestamptz, e->'data', e->>'a', e->>'c', e->'wallets',
        e->>'f', e->>'t', coalesce(e->>'op', p->>'op'))
      returning "id" into v_event_id;
    if e->>'a' is not null then
      v_event_assets := v_event_assets || (e->>'a');
      v_event_ids := v_event_ids || v_event_id;
    end if;
    if e->>'f' is not null then
      v_event_wallets := v_event_wallets || (e->>'f');
      v_wallet_event_ids := v_wallet_event_ids || v_event_id;
    end if;
    if e->>'t' is not null then
      v_event_wallets := v_event_wallets || (e->>'t');
      v_wallet_event_ids := v_wallet_event_ids || v_event_id;
    end if;
  end loop;
  -- Issue 34: each NFT's newest event (asset_last_event), in the events' transaction, so a reader that
  -- sees an event sees a bound at or past it: an NFT's event read stops there (src/events/reads.ts)
  -- and skips the log's partitions after it. Never lowered (a concurrent plan's later event may have
  -- committed first). Rows in asset id order (code points, as the callers sort their lock lists). A
  -- currency has none: its events fill a page near any point.
  if cardinality(v_event_assets) > 0 then
    if v_event_assets[1] = all(v_event_assets) then
      -- One asset (most plans: a transfer, a batch transfer of a currency): its newest event is the
      -- last id drawn, and the statement's plan stays a primary-key lookup, kept by the session.
      insert into "asset_last_event" ("asset_id", "event_id")
        select a."id", v_event_ids[cardinality(v_event_ids)] from "asset" a
          where a."id" = v_event_assets[1] and a."kind" = 'nft'
        on conflict ("asset_id") do update set "event_id" = excluded."event_id"
          where "asset_last_event"."event_id" < excluded."event_id";
    else
      insert into "asset_last_event" ("asset_id", "event_id")
        select x."a", max(x."i") from unnest(v_event_assets, v_event_ids) as x("a", "i")
          join "asset" a on a."id" = x."a" and a."kind" = 'nft'
          group by x."a" order by x."a" collate "C"
        on conflict ("asset_id") do update set "event_id" = excluded."event_id"
          where "asset_last_event"."event_id" < excluded."event_id";
    end if;
  end if;
  -- The same for each wallet the events name as `from` or `to` (wallet_last_event): a wallet's event
  -- read stops there. Rows in address order (lowercase hex: code points); an address's row is locked
  -- to commit, after every holding and asset row the plan locks, before the audit trail's tip. Not
  -- the zero address (every currency mint's `from`, every burn's `to`: one row every such plan would
  -- queue on); its reads have no bound.
  if cardinality(v_event_wallets) > 0 then
    insert into "wallet_last_event" ("wallet", "event_id")
      select x."w", max(x."i") from unnest(v_event_wallets, v_wallet_event_ids) as x("w", "i")
        where x."w" <> '0x0000000000000000000000000000000000000000'
        group by x."w" order by x."w" collate "C"
      on conflict ("wallet") do update set "event_id" = excluded."event_id"
        where "wallet_last_event"."event_id" < excluded."event_id";
  end if;
  part := p->'changes';
  for j in 0 .. coalesce(jsonb_array_length(part), 0) - 1 loop
    e := part->j;
    insert into "ledger_change" ("kind", "occurred_at", "user_id", "wallet")
      values (e->>'kind', (e->>'occurred_at')::timestamptz, e->>'u', e->>'w');
  end loop;
  -- Issue 37: the plan's audit entries, last (src/domain/audit.ts, `recordAudit`, does the same).
  -- Updating the tip first takes its row lock: appends queue there, and the chain never forks.
  part := p->'audit';
  if part is not null then
    update "audit_tip" set "seq" = "seq" + jsonb_array_length(part) where "id" = 1
      returning "seq", "hash" into v_row;
    v_seq := v_row."seq" - jsonb_array_length(part);
    v_hash := v_row."hash";
    for j in 0 .. jsonb_array_length(part) - 1 loop
      e := part->j;
      v_seq := v_seq + 1;
      v_next := encode(sha256(convert_to(v_hash || E'\n' || v_seq::text || E'\n' || (e->>'body'), 'UTF8')), 'hex');
      insert into "audit_entry" ("seq", "at", "action", "actor_id", "object_type", "object_id", "owner_id",
          "collection_id", "body", "prev_hash", "hash")
        values (v_seq, (e->>'at')::timestamptz, e->>'action', e->>'actor', e->>'ot', e->>'oi', e->>'owner',
          e->>'c', e->>'body', v_hash, v_next);
      v_hash := v_next;
    end loop;
    update "audit_tip" set "hash" = v_hash where "id" = 1;
  end if;
  return null;
end
$body$;

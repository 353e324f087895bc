// Written by hand: the generator diffs entities, and a function is no entity. On PostgreSQL every
// ledger write is one call of `gats_apply_plan` (src/domain/ledger/store/postgres.ts builds the
// argument from the domain's plan, src/domain/ledger/store/plan.ts describes it): one round trip in
// its own transaction. The function decides nothing: it takes the idempotency record, locks what the
// plan names in a fixed order, evaluates the plan's guards in order and applies the plan's rows.
// (gats_apply_transfer, the transfer-only function it replaces, is dropped by
// Migration20261128100000_drop_apply_transfer.)
import { DualPlatformMigration } from '../dual-platform-migration.ts';

/**
 * Returns null when the plan is applied, or the idempotency record that already holds the key
 * (nothing changed then). Raises SQLSTATE GTG01 when a guard fails (DETAIL: the guard's index in the
 * plan; HINT: the balance or supply found, for the guards about amounts) and GTN01 when a change
 * would take a balance below zero (DETAIL: asset and wallet), each rolling back everything.
 *
 * Locks, always in this order so that no two plans wait on each other in a cycle: the idempotency
 * record (its unique key), the currencies whose supply the plan reads or changes (`supply_locks`,
 * sorted by the caller), the holdings it reads or changes (`locks`, sorted by asset then wallet),
 * then the rows its inserts and updates touch, the counters last, the outbox writers' shared lock
 * (src/events/outbox-lock.ts) right before the event rows draw their ids.
 */
export const APPLY_PLAN = `create function "gats_apply_plan"(p jsonb, p_outbox_lock bigint) returns jsonb
language plpgsql as $body$
declare
  v_at timestamptz := (p->>'at')::timestamptz;
  r jsonb := p->'record';
  existing record;
  g jsonb;
  i int := 0;
  v_found numeric;
  v_seq bigint;
  k record;
begin
  -- The idempotency record first, with the answer: a concurrent request with the same key waits
  -- here for this transaction, then finds the record (or, if this one rolled back, takes the key).
  if r is not null then
    insert into "idempotency_record" ("id", "request_hash", "status", "response_body", "response_headers", "created_at", "expires_at")
      values (r->>'id', r->>'hash', (r->>'status')::int, r->'body', r->'headers', v_at, (r->>'expires')::timestamptz)
      on conflict ("id") do nothing;
    if not found then
      select x."request_hash", x."status", x."response_body", x."response_headers", x."expires_at"
        into existing from "idempotency_record" x where x."id" = r->>'id';
      if not found then
        raise exception 'idempotency record vanished; try again' using errcode = '40001';
      end if;
      if existing."expires_at" > v_at then
        return jsonb_build_object('request_hash', existing."request_hash", 'status', existing."status",
          'response_body', existing."response_body", 'response_headers', existing."response_headers",
          'expires_at', existing."expires_at");
      end if;
      -- An expired record protects nothing: replace it (a concurrent replacement makes this fail
      -- with a unique violation; the caller runs the plan again and replays the winner).
      delete from "idempotency_record" where "id" = r->>'id' and "expires_at" <= v_at;
      insert into "idempotency_record" ("id", "request_hash", "status", "response_body", "response_headers", "created_at", "expires_at")
        values (r->>'id', r->>'hash', (r->>'status')::int, r->'body', r->'headers', v_at, (r->>'expires')::timestamptz);
    end if;
  end if;

  -- FOR NO KEY UPDATE, not FOR UPDATE: the supply is no key, and FOR UPDATE would also block the
  -- foreign-key checks (FOR KEY SHARE) of every row inserted for this currency meanwhile.
  if p ? 'supply_locks' then
    for k in select value as a from jsonb_array_elements_text(p->'supply_locks') loop
      perform 1 from "asset" where "id" = k.a for no key update;
    end loop;
  end if;
  if p ? 'locks' then
    for k in select l.a, l.w from jsonb_to_recordset(p->'locks') as l(a text, w text) loop
      perform 1 from "holding" where "asset_id" = k.a and "wallet" = k.w for update;
    end loop;
  end if;

  if p ? 'guards' then
    for g in select value from jsonb_array_elements(p->'guards') loop
      case g->>'k'
        when 'controls' then
          perform 1 from "wallet" where "address" = g->>'w' and "user_id" = g->>'u';
          if not found then
            raise exception 'guard failed' using errcode = 'GTG01', detail = i::text;
          end if;
        when 'holds' then
          v_found := null;
          select "balance" into v_found from "holding" where "asset_id" = g->>'a' and "wallet" = g->>'w';
          v_found := coalesce(v_found, 0);
          if v_found < (g->>'n')::numeric then
            raise exception 'guard failed' using errcode = 'GTG01', detail = i::text, hint = v_found::text;
          end if;
        when 'supply' then
          v_found := null;
          select "total_supply" into v_found from "asset" where "id" = g->>'a';
          v_found := coalesce(v_found, 0);
          if v_found + (g->>'n')::numeric > (g->>'max')::numeric then
            raise exception 'guard failed' using errcode = 'GTG01', detail = i::text, hint = v_found::text;
          end if;
        when 'asset_absent' then
          perform 1 from "asset" where "id" = g->>'a';
          if found then
            raise exception 'guard failed' using errcode = 'GTG01', detail = i::text;
          end if;
        when 'wallet_absent' then
          perform 1 from "wallet" where "address" = g->>'w';
          if found then
            raise exception 'guard failed' using errcode = 'GTG01', detail = i::text;
          end if;
        else
          raise exception 'unknown guard %', g->>'k';
      end case;
      i := i + 1;
    end loop;
  end if;

  if p ? 'assets' then
    for k in select * from jsonb_to_recordset(p->'assets') as x(id text, kind text, name text,
        description text, metadata jsonb, collection text, creator text, symbol text, decimals int,
        total_supply numeric, max_supply numeric, owner text, created_at timestamptz) loop
      -- The asset counter serializes its writers until they commit (src/db/sequences.ts).
      insert into "sequence_counter" ("name", "value") values ('asset', 1)
        on conflict ("name") do update set "value" = "sequence_counter"."value" + 1 returning "value" into v_seq;
      insert into "asset" ("id", "seq", "kind", "name", "description", "metadata", "collection_id",
          "creator_id", "symbol", "decimals", "total_supply", "max_supply", "owner", "created_at")
        values (k.id, v_seq, k.kind, k.name, k.description, k.metadata, k.collection, k.creator, k.symbol, k.decimals,
          k.total_supply, k.max_supply, k.owner, k.created_at);
    end loop;
  end if;
  if p ? 'wallets' then
    insert into "wallet" ("address", "user_id", "kind", "encrypted_private_key", "created_at")
      select x.address, x.user_id, x.kind, x.key, x.created_at
        from jsonb_to_recordset(p->'wallets') as x(address text, user_id text, kind text, key text, created_at timestamptz);
  end if;
  if p ? 'balances' then
    for k in select * from jsonb_to_recordset(p->'balances') as x(a text, w text, d numeric) loop
      insert into "holding" ("wallet", "asset_id", "balance", "updated_at") values (k.w, k.a, k.d, v_at)
        on conflict ("wallet", "asset_id") do update
        set "balance" = "holding"."balance" + excluded."balance", "updated_at" = excluded."updated_at"
        returning "balance" into v_found;
      if v_found < 0 then
        raise exception 'negative balance' using errcode = 'GTN01', detail = k.a || ' ' || k.w;
      end if;
    end loop;
  end if;
  if p ? 'supplies' then
    for k in select * from jsonb_to_recordset(p->'supplies') as x(a text, d numeric) loop
      update "asset" set "total_supply" = "total_supply" + k.d where "id" = k.a;
    end loop;
  end if;
  if p ? 'owners' then
    for k in select * from jsonb_to_recordset(p->'owners') as x(a text, o text) loop
      update "asset" set "owner" = k.o where "id" = k.a;
    end loop;
  end if;
  if p ? 'transfers' then
    for k in select * from jsonb_to_recordset(p->'transfers') as x(id text, a text, f text, t text,
        n numeric, u text, at timestamptz) loop
      insert into "transfer" ("id", "seq", "asset_id", "from_address", "to_address", "amount", "status",
          "failure_reason", "requested_by_id", "created_at", "completed_at")
        values (k.id, nextval('transfer_seq'), k.a, k.f, k.t, k.n, 'completed', null, k.u, k.at, k.at);
    end loop;
  end if;
  if p ? 'prices' then
    insert into "price_observation" ("asset_id", "price", "price_scaled", "currency", "source",
        "observed_at", "posted_by_id", "created_at")
      select x.a, x.price, x.scaled, x.currency, x.source, x.observed_at, x.u, x.created_at
        from jsonb_to_recordset(p->'prices') as x(a text, price text, scaled numeric, currency text,
          source text, observed_at timestamptz, u text, created_at timestamptz);
  end if;

  if p ? 'events' or p ? 'changes' then
    -- The outbox writers' shared lock, held to commit, before the rows draw their ids.
    perform pg_advisory_xact_lock_shared(p_outbox_lock);
  end if;
  if p ? 'events' then
    for k in select * from jsonb_to_recordset(p->'events') as x(type text, occurred_at timestamptz,
        data jsonb, a text, c text, wallets jsonb, f text, t text) loop
      insert into "outbox_event" ("type", "occurred_at", "data", "asset_id", "collection_id", "wallets",
          "from_wallet", "to_wallet")
        values (k.type, k.occurred_at, k.data, k.a, k.c, k.wallets, k.f, k.t);
    end loop;
  end if;
  if p ? 'changes' then
    for k in select * from jsonb_to_recordset(p->'changes') as x(kind text, occurred_at timestamptz,
        u text, w text) loop
      insert into "ledger_change" ("kind", "occurred_at", "user_id", "wallet") values (k.kind, k.occurred_at, k.u, k.w);
    end loop;
  end if;
  return null;
end
$body$;`;

export class Migration20261124152500_apply_plan_function extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: { up: [], down: [] },
    postgresql: {
      up: [APPLY_PLAN],
      down: ['drop function if exists "gats_apply_plan"(jsonb, bigint);'],
    },
  };
}

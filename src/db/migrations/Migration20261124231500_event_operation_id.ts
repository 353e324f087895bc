// Written by hand: outbox_event.operation_id, the `op_` id of the multi-part operation (a batch
// transfer, a batch mint, a craft, a trade's settlement) an event belongs to, published as the
// envelope's `operationId` (issue 21: the events of every leg share the operation's id). The plan
// carries it once (`Plan.operationId`); `gats_apply_plan` writes it on every event row of the plan: the
// previous body (Migration20261124203000_apply_plan_economy) with its event insert taking `p->>'op'`.
import { DualPlatformMigration } from '../dual-platform-migration.ts';
import { APPLY_PLAN as APPLY_PLAN_ECONOMY } from './Migration20261124203000_apply_plan_economy.ts';

const EVENT_INSERT = `    insert into "outbox_event" ("type", "occurred_at", "data", "asset_id", "collection_id", "wallets",
        "from_wallet", "to_wallet")
      values (e->>'type', (e->>'occurred_at')::timestamptz, e->'data', e->>'a', e->>'c', e->'wallets',
        e->>'f', e->>'t');`;

const EVENT_INSERT_WITH_OPERATION = `    insert into "outbox_event" ("type", "occurred_at", "data", "asset_id", "collection_id", "wallets",
        "from_wallet", "to_wallet", "operation_id")
      values (e->>'type', (e->>'occurred_at')::timestamptz, e->'data', e->>'a', e->>'c', e->'wallets',
        e->>'f', e->>'t', p->>'op');`;

if (APPLY_PLAN_ECONOMY.split(EVENT_INSERT).length !== 2)
  throw new Error('gats_apply_plan: the event insert to extend was not found exactly once');

export const APPLY_PLAN = APPLY_PLAN_ECONOMY.replace(EVENT_INSERT, EVENT_INSERT_WITH_OPERATION);

export class Migration20261124231500_event_operation_id extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: ['alter table `outbox_event` add column `operation_id` text null;'],
      down: ['alter table `outbox_event` drop column `operation_id`;'],
    },
    postgresql: {
      up: ['alter table "outbox_event" add column "operation_id" text null;', APPLY_PLAN],
      down: [APPLY_PLAN_ECONOMY, 'alter table "outbox_event" drop column "operation_id";'],
    },
  };
}

// Written by hand: asset.frozen_by, the user who froze the asset (null while it is not frozen), so
// an unfreeze can be refused to anyone below that party's role level (issue 30, finding 2: a studio
// undid an admin's freeze). `gats_apply_plan` sets it with `frozen` from a plan's asset update: the
// previous body (Migration20261124231500_event_operation_id) with its `frozen` assignment extended.
import { DualPlatformMigration } from '../dual-platform-migration.ts';
import { APPLY_PLAN as APPLY_PLAN_OPERATION_ID } from './Migration20261124231500_event_operation_id.ts';

const SET_FROZEN = `        "frozen" = coalesce((e->>'frozen')::boolean, "frozen"),`;

const SET_FROZEN_AND_BY = `${SET_FROZEN}
        "frozen_by" = case when e ? 'frozen' then e->>'frozen_by' else "frozen_by" end,`;

if (APPLY_PLAN_OPERATION_ID.split(SET_FROZEN).length !== 2)
  throw new Error('gats_apply_plan: the frozen assignment to extend was not found exactly once');

export const APPLY_PLAN = APPLY_PLAN_OPERATION_ID.replace(SET_FROZEN, SET_FROZEN_AND_BY);

export class Migration20261128164000_asset_frozen_by extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: ['alter table `asset` add column `frozen_by` text null;'],
      down: ['alter table `asset` drop column `frozen_by`;'],
    },
    postgresql: {
      up: ['alter table "asset" add column "frozen_by" varchar(255) null;', APPLY_PLAN],
      down: [APPLY_PLAN_OPERATION_ID, 'alter table "asset" drop column "frozen_by";'],
    },
  };
}

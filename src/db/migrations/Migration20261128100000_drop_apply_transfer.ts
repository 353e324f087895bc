// Written by hand: drops `gats_apply_transfer`, the transfer-only database function that
// `gats_apply_plan` replaced (Migration20261124152500_apply_plan_function); no code has called it
// since. On PostgreSQL every ledger write is one call of gats_apply_plan
// (src/domain/ledger/store/postgres.ts): one implementation of each write per database.
import { DualPlatformMigration } from '../dual-platform-migration.ts';
import { APPLY_TRANSFER, DROP_APPLY_TRANSFER } from './Migration20261122043000_apply_transfer_function.ts';

export class Migration20261128100000_drop_apply_transfer extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: { up: [], down: [] },
    postgresql: { up: [DROP_APPLY_TRANSFER], down: [APPLY_TRANSFER] },
  };
}

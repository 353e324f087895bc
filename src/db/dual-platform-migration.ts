import { Migration } from '@mikro-orm/migrations';
import { type DatabaseKind, databaseKindOf } from './platform.ts';

/** The statements of one migration for one database, in both directions. */
export interface PlatformStatements {
  up: string[];
  down: string[];
}

/**
 * A migration that carries its SQL for every supported database and runs the set matching the
 * connected one. MikroORM generates SQL per platform, so one schema change is generated twice
 * (scripts/db-migration-create.ts diffs the entities against both databases) and committed once,
 * keeping a single migration history for SQLite and PostgreSQL.
 */
export abstract class DualPlatformMigration extends Migration {
  protected abstract readonly statements: Record<DatabaseKind, PlatformStatements>;

  override up(): void {
    this.addAll('up');
  }

  override down(): void {
    this.addAll('down');
  }

  private addAll(direction: keyof PlatformStatements): void {
    for (const sql of this.statements[databaseKindOf(this.driver.getPlatform())][direction]) {
      this.addSql(sql);
    }
  }
}

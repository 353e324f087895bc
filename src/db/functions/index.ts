// The database functions (PostgreSQL only), one `.sql` file each in this folder, each holding one
// `create or replace function` statement. They are applied as repeatable migrations are: after the
// table migrations, inside the same transaction and under the same lock (`migrate()` in
// src/db/orm.ts), a file runs again when its checksum differs from the one recorded for it in
// `database_function`. Migrations change tables only; a function changes in its file.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the checksum of each applied function file is recorded (no entity: see `skipTables`). */
export const FUNCTIONS_TABLE = 'database_function';

export interface DatabaseFunction {
  /** The file's name without `.sql`: the function's name. */
  name: string;
  sql: string;
  /** SHA-256 of the file, hex. */
  checksum: string;
}

/** Runs one statement in the migration's transaction; returns its rows. */
export type ExecuteInTransaction = (sql: string, params?: unknown[]) => Promise<unknown[]>;

/** Every function file of this folder, in name order. */
export function databaseFunctions(): DatabaseFunction[] {
  return readdirSync(import.meta.dirname)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => {
      const sql = readFileSync(join(import.meta.dirname, file), 'utf8');
      return {
        name: file.slice(0, -'.sql'.length),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

/**
 * Applies each function file whose checksum is not the one recorded, or every file when `all` (the
 * table migrations just run may have re-created a function from an older text); returns the names
 * applied. Call it inside the migration transaction, under the migration lock.
 */
export async function applyDatabaseFunctions(execute: ExecuteInTransaction, all: boolean): Promise<string[]> {
  await execute(
    `create table if not exists "${FUNCTIONS_TABLE}" ("name" varchar(255) not null primary key, "checksum" varchar(64) not null, "applied_at" timestamptz not null)`,
  );
  const rows = (await execute(`select "name", "checksum" from "${FUNCTIONS_TABLE}"`)) as {
    name: string;
    checksum: string;
  }[];
  const recorded = new Map(rows.map((row) => [row.name, row.checksum]));
  const applied: string[] = [];
  for (const fn of databaseFunctions()) {
    if (!all && recorded.get(fn.name) === fn.checksum) continue;
    await execute(fn.sql);
    await execute(
      `insert into "${FUNCTIONS_TABLE}" ("name", "checksum", "applied_at") values (?, ?, now())
         on conflict ("name") do update set "checksum" = excluded."checksum", "applied_at" = excluded."applied_at"`,
      [fn.name, fn.checksum],
    );
    applied.push(fn.name);
  }
  return applied;
}

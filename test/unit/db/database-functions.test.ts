// Database functions have one home each, src/db/functions/<name>.sql, applied by `migrate()` when the
// file changes (src/db/functions/index.ts); migrations change tables only. The migrations up to
// Migration20261128164000_asset_frozen_by created and patched gats_apply_plan and stay as they are,
// for databases upgrading through them; none after them may create a function (one may drop a
// function whose signature a file changes: `create or replace` cannot change a signature).
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { databaseFunctions } from '../../../src/db/functions/index.ts';

const MIGRATIONS_DIR = new URL('../../../src/db/migrations/', import.meta.url);
const LAST_WITH_FUNCTIONS = 'Migration20261128164000_asset_frozen_by.ts';

describe('database functions live in src/db/functions, not in migrations', () => {
  it('holds one `create or replace function` per file, named as the file', () => {
    const files = databaseFunctions();
    expect(files.length).toBeGreaterThan(0);
    for (const fn of files) {
      const code = fn.sql.replace(/--[^\n]*/g, '');
      const creates = [
        ...code.matchAll(/\bcreate\s+or\s+replace\s+function\s+"?([a-z_][a-z0-9_]*)"?\s*\(/gi),
      ];
      expect(
        creates.map((match) => match[1]),
        fn.name,
      ).toEqual([fn.name]);
      expect(code.match(/\bcreate\s+function\b/gi), fn.name).toBeNull();
    }
  });

  it('lets no migration after the files took over create or replace a function (dropping an old signature is a migration)', () => {
    const later = readdirSync(MIGRATIONS_DIR)
      .filter((file) => /^Migration\d{14}_.*\.ts$/.test(file) && file > LAST_WITH_FUNCTIONS)
      .map((file) => [file, readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8')] as const);
    for (const [file, text] of later) {
      expect(text, file).not.toMatch(/\bcreate\s+(or\s+replace\s+)?function\b/i);
    }
    expect(readdirSync(MIGRATIONS_DIR)).toContain(LAST_WITH_FUNCTIONS);
  });
});

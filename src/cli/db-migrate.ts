/**
 * Applies the committed migrations to the configured database.
 *
 *   npm run db:migrate                      SQLite at SQLITE_PATH (default ./data/gats.sqlite)
 *   DATABASE_URL=postgres://... npm run db:migrate
 *   DATABASE_URL=postgres://... npm run db:migrate -- --create-database   (creates it when missing)
 *
 * The service itself never creates a database: a typo in DATABASE_URL stops it with exit code 78.
 */
import { openDatabase } from '../db/database.ts';
import { migrate } from '../db/orm.ts';

const databaseUrl = process.env.DATABASE_URL || undefined;
const sqlitePath = process.env.SQLITE_PATH || './data/gats.sqlite';
// Named from the configuration: only src/db/ asks the open database which kind it is.
const target = databaseUrl ? 'postgresql' : 'sqlite';
const opened = await openDatabase({
  databaseUrl,
  sqlitePath,
  createDatabase: process.argv.includes('--create-database'),
});
const orm = opened.orm;
try {
  const applied = await migrate(orm);
  console.log(
    applied.length === 0
      ? `${target}: up to date`
      : `${target}: applied ${applied.length} migration(s): ${applied.join(', ')}`,
  );
} finally {
  await opened.close();
}

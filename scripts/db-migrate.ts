/**
 * Applies the committed migrations to the configured database.
 *
 *   npm run db:migrate                      SQLite at SQLITE_PATH (default ./data/gats.sqlite)
 *   DATABASE_URL=postgres://... npm run db:migrate
 *   DATABASE_URL=postgres://... npm run db:migrate -- --create-database   (creates it when missing)
 *
 * The service itself never creates a database: a typo in DATABASE_URL stops it with exit code 78.
 */
import { closeDatabase, databaseKind, migrate, openDatabase } from '../src/db/orm.ts';

const orm = await openDatabase({
  databaseUrl: process.env.DATABASE_URL || undefined,
  sqlitePath: process.env.SQLITE_PATH || './data/gats.sqlite',
  createDatabase: process.argv.includes('--create-database'),
});
try {
  const applied = await migrate(orm);
  const target = databaseKind(orm);
  console.log(
    applied.length === 0
      ? `${target}: up to date`
      : `${target}: applied ${applied.length} migration(s): ${applied.join(', ')}`,
  );
} finally {
  await closeDatabase(orm);
}

/**
 * `npm run db:restored`: run once on a database restored from a backup, before the service starts on
 * it (docs/operations/backups-and-restore.md). The event id sequence must never go backwards: clients hold
 * ids of events published after the backup was taken, which the restore undid. This moves the next
 * event id past every id published before the restore and records the skipped range, so a client
 * resuming from such an id is told to resync instead of being resumed onto another history
 * (src/events/restores.ts). Run it with no instance serving the database.
 *
 * Exit codes: 0 marked; 1 failed; 78 configuration.
 */
import { openDatabase } from '../db/database.ts';
import { markRestored } from '../events/restores.ts';
import { configOrExit } from './config-or-exit.ts';

const config = configOrExit();

const opened = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: config.sqlitePath });
const orm = opened.orm;
try {
  const { after, next } = await markRestored(orm);
  console.log(
    `${config.databaseUrl ? 'postgresql' : config.sqlitePath}: restored ledger marked: its events end at ${after}; the next event id is ${next}; clients resuming from an id in between are told to resync`,
  );
} finally {
  await opened.close();
}

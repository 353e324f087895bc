/**
 * `npm run audit:verify`: verifies the audit trail's hash chain (issue 37, src/domain/audit.ts) on
 * the configured database (DATABASE_URL, or SQLITE_PATH / DATA_DIR), read-only: every entry's hash
 * is SHA-256 of the hash before it, its sequence number and its canonical body; sequence numbers run
 * without gaps from retention's checkpoint to the tip; each entry's columns match its body. A
 * removed, altered or reordered entry is reported. Prints the tip (its sequence number and hash):
 * kept somewhere else (a ticket, a log), it shows later that the trail was not rewritten as a whole.
 *
 * Exit codes: 0 the chain holds; 1 it does not (each problem printed); 78 configuration.
 */
import { openDatabase } from '../db/database.ts';
import { verifyAudit } from '../domain/audit.ts';
import { configOrExit } from './config-or-exit.ts';

const config = configOrExit();
const db = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: config.sqlitePath });
const orm = db.orm;
try {
  const { problems, entries, tip } = await verifyAudit(orm);
  const where = config.databaseUrl ? 'postgresql' : config.sqlitePath;
  if (problems.length > 0) {
    console.error(`${where}: the audit trail does not verify (${problems.length} problem(s)):`);
    for (const problem of problems) console.error(`  ${problem}`);
    process.exitCode = 1;
  } else {
    const pruned = tip.prunedSeq > 0 ? `, entries up to ${tip.prunedSeq} pruned by retention` : '';
    console.log(`${where}: ok; ${entries} audit entries${pruned}; tip ${tip.seq} ${tip.hash}`);
  }
} finally {
  await db.close();
}

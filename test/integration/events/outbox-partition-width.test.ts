// Issue 34: the operator's setting of the event log's partition width, as docs/operations/sizing.md
// shows it (its SQL block, run as written on a migrated PostgreSQL database), applies to the
// partitions the keeper creates from then on; the partitions made before keep their width.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { OUTBOX_PARTITION_IDS, outboxPartitions } from '../../../src/db/outbox-partitions.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { EventStore } from '../../../src/events/store.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';
import { REPO_ROOT } from '../../helpers/service.ts';

/** The SQL block under "The log's partitions (PostgreSQL)" in the sizing guide. */
function documentedSetting(): string {
  const guide = readFileSync(path.join(REPO_ROOT, 'docs/operations/sizing.md'), 'utf8');
  const section = guide.slice(guide.indexOf("**The log's partitions (PostgreSQL).**"));
  const block = /```sql\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("docs/operations/sizing.md: no SQL block under The log's partitions");
  return block[1];
}

describe.runIf(DB_KINDS.includes('postgres'))(
  "the log's partition width set as the sizing guide says",
  () => {
    let database: ScratchDatabase;
    let handle: Database;

    beforeAll(async () => {
      database = await migratedDatabase('postgres');
      handle = await openDatabase(database);
    });

    afterAll(async () => {
      await handle?.close();
      await database?.drop();
    });

    it('gives the partitions created from then on its width, and leaves the ones made before', async () => {
      const connection = handle.orm.em.getConnection();
      const rows = (sql: string) => connection.execute(sql);
      const before = await outboxPartitions(rows);
      const sql = documentedSetting();
      const width = Number(/values \('outbox-partition-ids', (\d+)\)/.exec(sql)?.[1]);
      expect(width).toBeGreaterThan(OUTBOX_PARTITION_IDS);
      await connection.execute(sql);
      const created = await new EventStore(handle).keepPartitionsAhead();
      const after = await outboxPartitions(rows);
      expect(after.slice(0, before.length)).toEqual(before);
      const added = after.slice(before.length);
      expect(added.map((partition) => partition.name)).toEqual(created);
      expect(added.length).toBeGreaterThan(0);
      for (const partition of added) expect(partition.to - (partition.from ?? 0)).toBe(width);
      for (const partition of before.filter((p) => p.from !== null))
        expect(partition.to - (partition.from ?? 0)).toBe(OUTBOX_PARTITION_IDS);
    });
  },
);

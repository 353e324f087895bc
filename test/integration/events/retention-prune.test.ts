// Retention removes the events older than the window in batches of the primary key, oldest first
// (src/events/store.ts, `prune`; issue 34): the boundary was found by scanning the whole log. Both
// databases: 2,500 old events then 500 recent ones, removed 1,000 a transaction; and on PostgreSQL
// the boundary's read is a walk of the primary key under a LIMIT, not a scan of the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { dialectOf } from '../../../src/db/dialect.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import type { Orm } from '../../../src/db/orm.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { EventStore, PRUNE_BOUNDARY } from '../../../src/events/store.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';

const OLD = 2_500;
const RECENT = 500;
const DAY = 86_400_000;

describe.each(DB_KINDS)('event retention on %s', (kind) => {
  let db: ScratchDatabase;
  let opened: Database;
  let orm: Orm;

  beforeAll(async () => {
    db = await migratedDatabase(kind);
    opened = await openDatabase(db);
    orm = opened.orm;
    const now = Date.now();
    const rows = Array.from({ length: OLD + RECENT }, (_, n) => ({
      type: 'priceUpdate' as const,
      occurredAt: new Date(n < OLD ? now - 40 * DAY + n : now - 1000 + n),
      data: { assetId: 'gold', price: '1.00', currency: 'USD' },
      assetId: 'gold',
      collectionId: null,
      wallets: [],
      fromWallet: null,
      toWallet: null,
      operationId: null,
    }));
    await orm.em.fork().insertMany(OutboxEvent, rows);
  });

  afterAll(async () => {
    if (opened) await opened.close();
    await db?.drop();
  });

  it('removes exactly the old events, a batch at a time, and records how far', async () => {
    const store = new EventStore(opened);
    const [oldest, newest] = [await store.oldest(), await store.newest()];
    expect(await store.prune(new Date(Date.now() - 30 * DAY), 1_000)).toBe(OLD);
    expect([await store.oldest(), await store.newest()]).toEqual([(oldest as number) + OLD, newest]);
    expect(await store.prunedThrough()).toBe((oldest as number) + OLD - 1);
    // Nothing more to remove.
    expect(await store.prune(new Date(Date.now() - 30 * DAY), 1_000)).toBe(0);
  });

  it.runIf(kind === 'postgres')(
    'finds the boundary on the primary key, under a LIMIT, unanalyzed',
    async () => {
      // As `prune` runs it: in its transaction, with the planner pinned (the table was never analyzed).
      const em = orm.em.fork();
      const rows = await em.transactional(async (tx) => {
        await dialectOf(tx).pinInTransaction((sql, values) => tx.execute(sql, values ?? []));
        return tx.execute<{ 'QUERY PLAN': string }[]>(`explain ${PRUNE_BOUNDARY}`, [1000, new Date()]);
      });
      const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index Scan using outbox_event_\w*pkey/);
      expect(plan).not.toContain('Seq Scan');
    },
  );
});

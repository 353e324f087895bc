// Issue 34: a wallet's event read stops looking for price updates at the newest one the relay has
// handed over (OutboxTail `newestPriceUpdate`, passed with `lastId` to EventStore `after`:
// src/events/reads.ts). The relay must know it from its start (the newest price update committed
// before it) and follow every one it hands over: a price update past the value would never be read
// by a wallet filter. event-reads.test.ts holds the answers with the bound to the answers without it;
// event-read-plans.test.ts shows the partitions it leaves out.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { type EventType, OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { EventStore } from '../../../src/events/store.ts';
import { OutboxTail } from '../../../src/events/tail.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { Metrics } from '../../../src/observability/metrics.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';

const WALLET = '0x00000000000000000000000000000000000000a1';

/** The relay's counters, counted nowhere. */
const metrics = {
  eventsPublished: { inc: () => {} },
  relay: { lagSeconds: { observe: () => {} }, read: () => {} },
} as unknown as Metrics;

const row = (type: EventType): Omit<OutboxEvent, 'id'> =>
  ({
    type,
    occurredAt: new Date(),
    data: { type },
    assetId: 'gold',
    collectionId: 'dawn-quest',
    wallets: type === 'priceUpdate' ? [] : [WALLET],
    fromWallet: null,
    toWallet: type === 'priceUpdate' ? null : WALLET,
    operationId: null,
  }) as Omit<OutboxEvent, 'id'>;

describe.each(DB_KINDS)("the relay's newest price update on %s", (kind) => {
  let db: ScratchDatabase;
  let opened: Database;
  const insert = async (...types: EventType[]) => {
    const em = opened.orm.em.fork() as unknown as EntityManager;
    for (const type of types) await em.insert(OutboxEvent, row(type));
  };
  const ids = async (type: EventType) => {
    const em = opened.orm.em.fork() as unknown as EntityManager;
    return ((await em.find(OutboxEvent, { type }, { orderBy: { id: 'asc' } })) as OutboxEvent[]).map(
      (event) => Number(event.id),
    );
  };

  beforeAll(async () => {
    db = await migratedDatabase(kind);
    opened = await openDatabase(db);
  });

  afterAll(async () => {
    await opened.close();
    await db.drop();
  });

  it('starts at the newest price update committed before it and follows each one it hands over', async () => {
    const tail = new OutboxTail(new EventStore(opened), {
      pollMs: 60_000,
      logger: createLogger('silent'),
      metrics,
    });
    try {
      await insert('newTransfer', 'priceUpdate', 'priceUpdate', 'newTransfer');
      await tail.start();
      const before = await ids('priceUpdate');
      expect(tail.newestPriceUpdate).toBe(before[1]);
      expect(tail.lastId).toBeGreaterThan(before[1]);
      // A transfer after it leaves it; a new price update moves it as the relay hands it over.
      await insert('newTransfer');
      await tail.flush();
      expect(tail.newestPriceUpdate).toBe(before[1]);
      await insert('priceUpdate', 'assetUpdated');
      await tail.flush();
      const after = await ids('priceUpdate');
      expect(after).toHaveLength(3);
      expect(tail.newestPriceUpdate).toBe(after[2]);
      expect(tail.lastId).toBe(after[2] + 1);
    } finally {
      tail.stop();
    }
  });
});

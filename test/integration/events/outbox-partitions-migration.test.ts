// Issue 34: Migration20261129170000_outbox_partitions converts an existing log (PostgreSQL: the table
// becomes the first range partition of a partitioned `outbox_event`; SQLite: nothing to convert), on
// both databases from the schema just before it, with data. Every read the service makes of the log
// (REST/WebSocket pages with each filter shape, the relay's pages, the retained range, `npm run
// db:check`) answers the same before and after; the ids and their sequence continue into new
// partitions the keeper creates ahead (src/db/outbox-partitions.ts), here 500 ids each; and
// retention then drops the partitions wholly past its window and deletes the rest of the old events
// row by row, the sequence surviving the drop of the partition it was created with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { EVENT_TYPES, type EventType, OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { migrate, type Orm } from '../../../src/db/orm.ts';
import { outboxPartitions, PARTITION_IDS_ROW } from '../../../src/db/outbox-partitions.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { type EventFilter, matches } from '../../../src/events/filter.ts';
import { keepWalletBoundsSql } from '../../../src/events/reads.ts';
import { EventStore, toPublished } from '../../../src/events/store.ts';
import { runScript } from '../../helpers/commands.ts';
import { DB_KINDS, freshDatabase } from '../../helpers/db.ts';

const BEFORE = 'Migration20261129143100_nft_minted_to';
const MIGRATION = 'Migration20261129170000_outbox_partitions';
const PARTITION_IDS = 500;
const OLD_LOG = 1_750;
/** Events written after the migration, a keeper's pass before each partition's worth (the service: every 5 minutes). */
const NEW_EVENTS = 1_500;
const BASE = Date.UTC(2026, 9, 1);

const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const TYPES: EventType[] = ['newTransfer', 'newTransfer', 'newNFT', 'priceUpdate', 'assetUpdated', 'sale'];

/** Event number n (1-based, its id when ids start at 1), in the stores' format. */
function eventRow(n: number): Omit<OutboxEvent, 'id'> {
  const type = TYPES[n % TYPES.length];
  const from = type === 'newTransfer' || type === 'sale' ? wallet(n % 7) : null;
  const to = type === 'priceUpdate' ? null : wallet((n * 3 + 1) % 7);
  const assetId = type === 'newNFT' ? `nft_${n}` : n % 2 === 0 ? 'gold' : 'gems';
  return {
    type,
    occurredAt: new Date(BASE + n * 1000),
    data: { n, assetId, note: `event ${n}` },
    assetId,
    collectionId: n % 3 === 0 ? null : n % 3 === 1 ? 'dawn-quest' : 'night-raid',
    wallets: [from, to].filter((address): address is string => address !== null),
    fromWallet: from,
    toWallet: to,
    operationId: n % 5 === 0 ? `op_${Math.floor(n / 10)}` : null,
  } as Omit<OutboxEvent, 'id'>;
}

const ALL = new Set(EVENT_TYPES);
const FILTERS: [string, EventFilter | undefined][] = [
  ['none', undefined],
  ['every type', { types: ALL }],
  ['some types', { types: new Set<EventType>(['newNFT', 'priceUpdate']) }],
  ['a wallet', { types: ALL, wallet: wallet(3) }],
  ['a wallet, transfers', { types: new Set<EventType>(['newTransfer']), wallet: wallet(5) }],
  ['an asset', { types: ALL, assetId: 'gold' }],
  ['an NFT', { types: ALL, assetId: 'nft_2' }],
  [
    'a collection, some types',
    { types: new Set<EventType>(['newTransfer', 'sale']), collection: 'night-raid' },
  ],
  ['a wallet and an asset', { types: ALL, wallet: wallet(1), assetId: 'gems' }],
];

/** An event as published (its envelope parsed: PostgreSQL's jsonb orders an object's keys its own way). */
const published = (row: OutboxEvent) => {
  const { json, ...event } = toPublished(row);
  return { ...event, envelope: JSON.parse(json) as unknown };
};

/** Every read the service makes of the log, page by page (as published), and the range. */
async function readAll(store: EventStore) {
  const pages: Record<string, unknown[]> = {};
  for (const [name, filter] of FILTERS) {
    const seen: unknown[] = [];
    for (let after = 0; ; ) {
      const page = await store.after(after, 199, filter);
      if (page.length === 0) break;
      seen.push(...page.map((row) => published(row).envelope));
      after = Number(page.at(-1)?.id);
    }
    pages[name] = seen;
  }
  const relay: unknown[] = [];
  for (let after = 0; ; ) {
    const page = await store.next(after, 500);
    if (page.length === 0) break;
    relay.push(...page.map(published));
    after = Number(page.at(-1)?.id);
  }
  return {
    pages,
    relay,
    range: { oldest: await store.oldest(), newest: await store.newest() },
    prunedThrough: await store.prunedThrough(),
  };
}

describe.each(DB_KINDS)('the outbox converted by its migration on %s', (kind) => {
  let database: ScratchDatabase;
  let handle: Database | undefined;
  let orm: Orm;
  let store: EventStore;
  const postgres = kind === 'postgres';
  const check = () =>
    runScript(
      'src/cli/db-check.ts',
      [],
      postgres
        ? { DATABASE_URL: database.databaseUrl as string }
        : { SQLITE_PATH: database.sqlitePath as string },
    );
  /** Rows per partition (PostgreSQL). */
  const held = async () =>
    Object.fromEntries(
      (
        await orm.em
          .getConnection()
          .execute<{ name: string; count: string }[]>(
            'select tableoid::regclass::text as name, count(*) as count from outbox_event group by 1 order by 1',
          )
      ).map((row) => [row.name, Number(row.count)]),
    );
  const insert = async (first: number, last: number) => {
    for (let n = first; n <= last; n += 500)
      await orm.em.fork().insertMany(
        OutboxEvent,
        Array.from({ length: Math.min(500, last - n + 1) }, (_, i) => eventRow(n + i)),
      );
  };

  beforeAll(async () => {
    database = await freshDatabase(kind);
    handle = await openDatabase(database);
    orm = handle.orm;
    await orm.migrator.up({ to: BEFORE });
    store = new EventStore(handle);
    await insert(1, OLD_LOG);
    // Partitions of 500 ids from the migration on (PostgreSQL reads it; SQLite has no partitions).
    await orm.em
      .getConnection()
      .execute('insert into sequence_counter (name, value) values (?, ?)', [
        PARTITION_IDS_ROW,
        PARTITION_IDS,
      ]);
  });

  afterAll(async () => {
    await handle?.close();
    await database?.drop();
  });

  it('answers every read the same after converting the log, and ids continue into new partitions', async () => {
    const before = await readAll(store);
    expect(before.relay).toHaveLength(OLD_LOG);
    expect(before.range).toEqual({ oldest: 1, newest: OLD_LOG });
    const checkedBefore = await check();
    expect(checkedBefore.code, checkedBefore.stderr).toBe(0);

    // The migration under test runs first; later ones may follow it.
    expect((await migrate(orm))[0]).toBe(MIGRATION);
    expect(await readAll(store)).toEqual(before);
    const checkedAfter = await check();
    expect(checkedAfter.code, checkedAfter.stderr).toBe(0);
    expect(checkedAfter.stdout).toBe(checkedBefore.stdout);
    expect(checkedAfter.stdout).toContain(`outbox: ${OLD_LOG} events, ids 1..${OLD_LOG} without gaps`);
    if (postgres) {
      expect(await held()).toEqual({ outbox_event_p0: OLD_LOG });
      // Made by the migration: two partitions' worth of ids ahead of the last one.
      expect(
        (await outboxPartitions((sql) => orm.em.getConnection().execute(sql))).map((range) => range.name),
      ).toEqual(['outbox_event_p0', 'outbox_event_p1751', 'outbox_event_p2251']);
    }

    for (let first = OLD_LOG + 1; first <= OLD_LOG + NEW_EVENTS; first += PARTITION_IDS) {
      await store.keepPartitionsAhead();
      await insert(first, first + PARTITION_IDS - 1);
      // What the ledger function writes with its events on PostgreSQL (a later migration's table):
      // each address's newest event as `from` or `to`, where a wallet's read stops (not the zero
      // address, `wallet(0)`).
      if (postgres) await orm.em.getConnection().execute(keepWalletBoundsSql(first - 1));
    }
    const last = OLD_LOG + NEW_EVENTS;
    const all = Array.from({ length: last }, (_, i) => ({ id: i + 1, ...eventRow(i + 1) }) as OutboxEvent);
    const after = await readAll(store);
    expect(after.range).toEqual({ oldest: 1, newest: last });
    expect(after.relay).toEqual(all.map(published));
    for (const [name, filter] of FILTERS) {
      const wanted = all.filter((row) => !filter || matches(toPublished(row), filter));
      expect(wanted.length, name).toBeGreaterThan(0);
      expect(after.pages[name], name).toEqual(wanted.map((row) => published(row).envelope));
      expect(after.pages[name].slice(0, before.pages[name].length), name).toEqual(before.pages[name]);
    }
    const checked = await check();
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain(`outbox: ${last} events, ids 1..${last} without gaps`);
    if (postgres) {
      // The old log in the first partition, the new events in three partitions of 500 ids.
      expect(await held()).toEqual({
        outbox_event_p0: OLD_LOG,
        outbox_event_p1751: PARTITION_IDS,
        outbox_event_p2251: PARTITION_IDS,
        outbox_event_p2751: PARTITION_IDS,
      });
      // A keeper's pass: two partitions' worth of ids ahead of the last one.
      expect(await store.keepPartitionsAhead()).toEqual(['outbox_event_p3751']);
      const ranges = await outboxPartitions((sql) => orm.em.getConnection().execute(sql));
      expect(ranges.at(-1)?.to).toBeGreaterThan(last + 2 * PARTITION_IDS);
    }
    // 3,250 events read 9 ways page by page, 3 runs of db:check: tens of seconds on a loaded machine.
  }, 120_000);

  it('drops the partitions wholly past retention, deletes the rest row by row, and the ids go on', async () => {
    const old = 2_500;
    const removed = await store.prune(new Date(BASE + old * 1000 + 500), 400);
    expect(removed).toBe(old);
    expect(await store.prunedThrough()).toBe(old);
    expect([await store.oldest(), await store.newest()]).toEqual([old + 1, OLD_LOG + NEW_EVENTS]);
    if (postgres) {
      // p0 and p1751 dropped whole; p2251 held 2251..2750, its old half deleted row by row.
      expect(await held()).toEqual({ outbox_event_p2251: 250, outbox_event_p2751: PARTITION_IDS });
      const ranges = await outboxPartitions((sql) => orm.em.getConnection().execute(sql));
      expect(ranges[0].name).toBe('outbox_event_p2251');
    }
    await store.keepPartitionsAhead();
    await orm.em.fork().insertMany(OutboxEvent, [eventRow(OLD_LOG + NEW_EVENTS + 1)]);
    expect(await store.newest()).toBe(OLD_LOG + NEW_EVENTS + 1);
    const page = await store.after(old, 10, { types: ALL });
    expect(page.map((row) => Number(row.id))).toEqual(Array.from({ length: 10 }, (_, i) => old + 1 + i));
  });
});

// The outbox's filtered reads (src/events/reads.ts: UNION ALL of index-driven branches, the upper
// bound applied after the read) answer exactly what the single ORM query with the filter's OR
// answered before issue 34: the same events, the same order, the same pages, on both databases (with
// the relay's newest price update as the service passes it); and what live delivery's `matches` says
// about each event.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../../src/db/database.ts';
import { EVENT_TYPES, type EventType, OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import type { Orm } from '../../../src/db/orm.ts';
import type { ScratchDatabase } from '../../../src/db/scratch-database.ts';
import { type EventFilter, matches } from '../../../src/events/filter.ts';
import { readEvents } from '../../../src/events/reads.ts';
import { toEnvelope, toPublished } from '../../../src/events/store.ts';
import { DB_KINDS, migratedDatabase } from '../../helpers/db.ts';

const EVENTS = 1_200;
const WALLETS = Array.from({ length: 6 }, (_, n) => `0x${(n + 1).toString(16).padStart(40, 'a')}`);
const ASSETS = ['gold', 'gems', ...Array.from({ length: 12 }, (_, n) => `nft${n}`)];

/** A deterministic mix of every event type, self-transfers and events without wallets among them. */
function eventRows(): Omit<OutboxEvent, 'id'>[] {
  let seed = 42;
  const next = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const start = Date.parse('2026-11-01T00:00:00.000Z');
  return Array.from({ length: EVENTS }, (_, index) => {
    const type = EVENT_TYPES[next(EVENT_TYPES.length)];
    const assetId = ASSETS[next(ASSETS.length)];
    const from = WALLETS[next(WALLETS.length)];
    // One in six transfers goes to its own sender.
    const to = next(6) === 0 ? from : WALLETS[next(WALLETS.length)];
    const [fromWallet, toWallet] =
      type === 'priceUpdate'
        ? [null, null]
        : type === 'newNFT' || type === 'assetUpdated'
          ? [null, next(5) === 0 ? null : to]
          : [from, to];
    return {
      type,
      occurredAt: new Date(start + index * 1_237),
      data: { n: index, assetId, note: `event ${index}` },
      assetId,
      collectionId: next(7) === 0 ? null : assetId.length % 2 === 0 ? 'dawn-quest' : 'night-raid',
      wallets: [fromWallet, toWallet].filter((wallet): wallet is string => wallet !== null),
      fromWallet,
      toWallet,
      operationId: next(4) === 0 ? `op_${index}` : null,
    } as Omit<OutboxEvent, 'id'>;
  });
}

/** The read before issue 34: one ORM query with the filter's OR (src/events/filter.ts at 384ec80). */
async function formerRead(
  em: EntityManager,
  after: number,
  limit: number,
  filter: EventFilter | undefined,
  upTo: number | undefined,
): Promise<OutboxEvent[]> {
  const condition: Record<string, unknown> = {};
  if (filter) {
    condition.type = { $in: [...filter.types] };
    if (filter.assetId !== undefined) condition.assetId = filter.assetId;
    if (filter.collection !== undefined) condition.collectionId = filter.collection;
    if (filter.wallet !== undefined)
      condition.$or = [{ type: 'priceUpdate' }, { fromWallet: filter.wallet }, { toWallet: filter.wallet }];
  }
  condition.id = upTo === undefined ? { $gt: after } : { $gt: after, $lte: upTo };
  return (await em.find(OutboxEvent, condition as never, { orderBy: { id: 'asc' }, limit })) as OutboxEvent[];
}

const set = (...types: EventType[]) => new Set(types);
const ALL = new Set(EVENT_TYPES);
const FILTERS: [string, EventFilter | undefined][] = [
  ['none', undefined],
  ['every type', { types: ALL }],
  ['one type', { types: set('assetUpdated') }],
  ['price updates', { types: set('priceUpdate') }],
  ['some types', { types: set('newNFT', 'newTransfer', 'chainTransferRemoved') }],
  ['a wallet', { types: ALL, wallet: WALLETS[0] }],
  ['a wallet, no prices', { types: set('newTransfer', 'newNFT'), wallet: WALLETS[1] }],
  [
    'a wallet, prices and chain events',
    { types: set('priceUpdate', 'chainTransferPending'), wallet: WALLETS[2] },
  ],
  ['a wallet, prices only', { types: set('priceUpdate'), wallet: WALLETS[2] }],
  ['an unknown wallet', { types: ALL, wallet: `0x${'f'.repeat(40)}` }],
  ['an asset', { types: ALL, assetId: 'nft3' }],
  ['a currency, some types', { types: set('newTransfer', 'priceUpdate'), assetId: 'gold' }],
  ['a collection', { types: ALL, collection: 'night-raid' }],
  ['a wallet and an asset', { types: ALL, wallet: WALLETS[3], assetId: 'gems' }],
  [
    'a wallet and a collection',
    { types: set('newTransfer', 'priceUpdate', 'newNFT'), wallet: WALLETS[4], collection: 'dawn-quest' },
  ],
  [
    'quotes and a backslash in the values',
    { types: ALL, assetId: "gold' or '1'='1", collection: "x\\'); --" },
  ],
  ['everything at once', { types: ALL, wallet: WALLETS[5], assetId: 'gold', collection: 'dawn-quest' }],
];

describe.each(DB_KINDS)('outbox reads on %s', (kind) => {
  let db: ScratchDatabase;
  let opened: Database;
  let orm: Orm;
  let all: OutboxEvent[];
  const em = () => orm.em.fork() as unknown as EntityManager;
  /** The newest price update at or below `upTo` (OutboxTail `newestPriceUpdate`), 0 when none. */
  const newestPriceUpdate = (upTo: number | undefined) =>
    upTo === undefined
      ? undefined
      : Math.max(
          0,
          ...all
            .filter((row) => row.type === 'priceUpdate' && Number(row.id) <= upTo)
            .map((row) => Number(row.id)),
        );

  beforeAll(async () => {
    db = await migratedDatabase(kind);
    opened = await openDatabase(db);
    orm = opened.orm;
    await em().insertMany(OutboxEvent, eventRows());
    all = (await em().find(OutboxEvent, {}, { orderBy: { id: 'asc' } })) as OutboxEvent[];
    expect(all).toHaveLength(EVENTS);
  });

  afterAll(async () => {
    await opened.close();
    await db.drop();
  });

  it.each(FILTERS)('answers as before with the filter %s', async (_name, filter) => {
    const first = Number(all[0].id);
    const last = Number(all[all.length - 1].id);
    for (const after of [0, first + 100, first + 700, last]) {
      for (const limit of [1, 7, 1000]) {
        for (const upTo of [undefined, first + 650, last]) {
          // As the service reads: with the relay's newest price update at or below `upTo`.
          const now = (await readEvents(em(), after, limit, filter, upTo, newestPriceUpdate(upTo))).map(
            toEnvelope,
          );
          const before = (await formerRead(em(), after, limit, filter, upTo)).map(toEnvelope);
          expect(now, `after ${after}, limit ${limit}, up to ${upTo}`).toEqual(before);
        }
      }
    }
  });

  it.each(FILTERS)('pages through the filter %s as live delivery matches it', async (_name, filter) => {
    const upTo = Number(all[Math.floor(EVENTS * 0.9)].id);
    const wanted = all
      .filter((row) => Number(row.id) <= upTo && (!filter || matches(toPublished(row), filter)))
      .map(toEnvelope);
    const pages: ReturnType<typeof toEnvelope>[] = [];
    let after = 0;
    for (;;) {
      const page = (await readEvents(em(), after, 25, filter, upTo, newestPriceUpdate(upTo))).map(toEnvelope);
      pages.push(...page);
      if (page.length < 25) break;
      after = Number(page[page.length - 1].id);
    }
    expect(pages).toEqual(wanted);
  });
});

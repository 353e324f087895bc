// What the loot boxes' parts share (issue 36): a collection, a drop table (kept once read: tables
// never change), a loot box, a wallet's active draw seed. The definitions (./loot-box-definitions.ts),
// the draw seeds (./draw-seeds.ts) and the openings (./loot-box-openings.ts) take it from the loot box
// service (./loot-boxes.ts).

import type { SecretBox } from '../../crypto/secret-box.ts';
import type { Database } from '../../db/database.ts';
import { Collection } from '../../db/entities/Collection.ts';
import { DrawSeed, type DropEntry, DropTable, LootBox } from '../../db/entities/LootBox.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import type { StoredAddress } from './addresses.ts';
import type { Idempotency } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';

export class DrawSeedChangedError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/draw-seed-changed');
  }
}

const tableNotFound = (id: string) => new NotFoundError(`No drop table with id ${id}.`);
const boxNotFound = (id: string) => new NotFoundError(`No loot box with id ${id}.`);
export const seedContext = (id: string) => `draw-seed:${id}`;

export function totalOf(entries: DropEntry[]): bigint {
  return entries.reduce((sum, entry) => sum + BigInt(entry.weight), 0n);
}

export type LootBoxContext = ReturnType<typeof createLootBoxContext>;

export function createLootBoxContext(
  { orm, reads }: Database,
  idempotency: Idempotency,
  writer: LegWriter,
  secretBox: SecretBox,
) {
  // Tables never change: kept once read.
  const tables = new Map<string, DropTable>();

  async function collectionOf(id: string) {
    const collection = await orm.em.fork().findOne(Collection, { id }, { fields: ['id', 'owner'] });
    if (!collection) throw new NotFoundError(`No collection with id ${id}.`);
    return { id, ownerId: collection.owner.id };
  }

  async function tableOf(id: string): Promise<DropTable> {
    const known = tables.get(id);
    if (known) return known;
    const table = await orm.em.fork().findOne(DropTable, { id });
    if (!table) throw tableNotFound(id);
    if (tables.size > 10_000) tables.clear();
    tables.set(id, table);
    return table;
  }

  async function readBox(id: string): Promise<LootBox> {
    const box = await orm.em.fork().findOne(LootBox, { id });
    if (!box) throw boxNotFound(id);
    return box;
  }

  async function activeSeed(wallet: StoredAddress): Promise<DrawSeed | null> {
    return orm.em.fork().findOne(DrawSeed, { activeKey: wallet });
  }

  return { orm, reads, idempotency, writer, secretBox, collectionOf, tableOf, readBox, activeSeed };
}

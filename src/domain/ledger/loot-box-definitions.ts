// Loot box definitions (issue 36): a studio's drop tables (weighted outcomes, nested tables allowed,
// immutable, odds published as exact fractions, each table hashed for the draw: ./draw-algorithm.ts)
// and loot boxes (every NFT of a collection and name opens by a draw from a table, optionally with
// pity), created, read and listed. Opening a box is ./loot-box-openings.ts.

import type { components } from '../../../generated/openapi/types.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { type DropEntry, DropTable, LootBox, LootBoxPity } from '../../db/entities/LootBox.ts';
import { auditDraft, flushAudited } from '../audit.ts';
import { assertCollectionPowers, mayMintCurrency } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { isChainAssetId } from './chain-assets.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import { fraction, MAX_DRAW_DEPTH, tableHashOf } from './draw-algorithm.ts';
import { type LootBoxContext, totalOf } from './loot-box-context.ts';

type Schemas = components['schemas'];
export type DropOutcome = Schemas['DropOutcome'];
type DropTableView = Schemas['DropTable'];
type LootBoxView = Schemas['LootBox'];

export interface CreateDropTableInput {
  name: string;
  entries: { weight: number; outcome: DropOutcome }[];
}

export interface CreateLootBoxInput {
  name: string;
  table: string;
  paid: boolean;
  pity?: { after: number; entry: number } | null;
}

export interface LootBoxDefinitionMethods {
  createTable(actor: Actor, collectionId: string, input: CreateDropTableInput): Promise<DropTableView>;
  getTable(id: string): Promise<DropTableView>;
  createBox(actor: Actor, collectionId: string, input: CreateLootBoxInput): Promise<LootBoxView>;
  listBoxes(collectionId: string, options: { limit: number; cursor?: string }): Promise<Page<LootBoxView>>;
  getBox(id: string, wallet?: StoredAddress): Promise<LootBoxView>;
}

function tableView(table: DropTable): DropTableView {
  const total = totalOf(table.entries);
  return {
    id: table.id,
    collection: table.collectionId,
    name: table.name,
    entries: table.entries.map((entry) => ({ ...entry, odds: fraction(BigInt(entry.weight), total) })),
    totalWeight: Number(total),
    hash: table.hash,
    createdBy: table.createdBy,
    createdAt: table.createdAt.toISOString(),
  };
}

/** An amount of an outcome, its problem naming the entry. */
function outcomeAmount(text: string, decimals: number, pointer: string): bigint {
  try {
    return parseAmount(text, decimals, { pointer, positive: true });
  } catch (error) {
    if (!(error instanceof InvalidAmountError)) throw error;
    throw new InvalidAmountError(error.detail ?? '', pointer, error.errors?.[0]?.detail ?? '');
  }
}

export function createLootBoxDefinitionMethods(ctx: LootBoxContext): LootBoxDefinitionMethods {
  const { orm, collectionOf, tableOf, readBox } = ctx;

  /** How many tables a draw from `table` walks at most (itself included). */
  async function depthOf(table: DropTable): Promise<number> {
    let deepest = 0;
    for (const entry of table.entries)
      if (entry.outcome !== null && 'table' in entry.outcome)
        deepest = Math.max(deepest, await depthOf(await tableOf(entry.outcome.table)));
    return deepest + 1;
  }

  /** Every leaf outcome of `table` with its exact probability (nested tables multiplied out). */
  async function leaves(
    table: DropTable,
    path: number[],
    num: bigint,
    den: bigint,
  ): Promise<LootBoxView['odds']> {
    const total = totalOf(table.entries);
    const out: LootBoxView['odds'] = [];
    for (const [i, entry] of table.entries.entries()) {
      const [n, d] = [num * BigInt(entry.weight), den * total];
      if (entry.outcome !== null && 'table' in entry.outcome)
        out.push(...(await leaves(await tableOf(entry.outcome.table), [...path, i], n, d)));
      else out.push({ path: [...path, i], outcome: entry.outcome, odds: fraction(n, d) });
    }
    return out;
  }

  async function boxView(box: LootBox, wallet?: StoredAddress): Promise<LootBoxView> {
    const table = await tableOf(box.tableId);
    let pityCount: number | undefined;
    if (wallet !== undefined)
      pityCount = (await orm.em.fork().findOne(LootBoxPity, { boxId: box.id, wallet }))?.count ?? 0;
    return {
      id: box.id,
      collection: box.collectionId,
      name: box.name,
      table: box.tableId,
      tableHash: table.hash,
      paid: box.paid,
      pity: box.pityAfter != null ? { after: box.pityAfter, entry: box.pityEntry ?? 0 } : null,
      odds: await leaves(table, [], 1n, 1n),
      ...(pityCount !== undefined && { pityCount }),
      createdBy: box.createdBy,
      createdAt: box.createdAt.toISOString(),
    };
  }

  /** A currency outcome: one of the collection's currencies the actor may mint; its amount normalized. */
  async function checkCurrency(
    actor: Actor,
    collectionId: string,
    assetId: string,
    amount: string,
    pointer: string,
  ) {
    const currency = isChainAssetId(assetId)
      ? null
      : await orm.em.fork().findOne(Asset, { id: assetId, kind: 'fungible', collection: collectionId });
    if (!currency)
      throw new NotFoundError(`${pointer}: no currency ${assetId} in the collection ${collectionId}.`);
    if (!mayMintCurrency(actor, currency.creator.id))
      throw new ForbiddenError(`${pointer}: only the creator of ${assetId} or an admin may mint it.`);
    const decimals = currency.decimals ?? 0;
    return formatAmount(outcomeAmount(amount, decimals, `${pointer}/amount`), decimals);
  }

  async function checkOutcome(
    actor: Actor,
    collectionId: string,
    outcome: DropOutcome,
    pointer: string,
  ): Promise<DropOutcome> {
    if (outcome === null) return null;
    if ('nft' in outcome) return { nft: outcome.nft };
    if ('assetId' in outcome)
      return {
        assetId: outcome.assetId,
        amount: await checkCurrency(actor, collectionId, outcome.assetId, outcome.amount, pointer),
      };
    if ('bundle' in outcome) {
      const bundle: Extract<DropOutcome, { bundle: unknown }>['bundle'] = [];
      for (const [i, item] of outcome.bundle.entries()) {
        if ('nft' in item) bundle.push({ nft: item.nft });
        else
          bundle.push({
            assetId: item.assetId,
            amount: await checkCurrency(
              actor,
              collectionId,
              item.assetId,
              item.amount,
              `${pointer}/bundle/${i}`,
            ),
          });
      }
      return { bundle };
    }
    const nested = await tableOf(outcome.table).catch(() => undefined);
    if (!nested || nested.collectionId !== collectionId)
      throw new NotFoundError(
        `${pointer}: no drop table ${outcome.table} in the collection ${collectionId}.`,
      );
    if ((await depthOf(nested)) + 1 > MAX_DRAW_DEPTH)
      throw new ValidationError(
        `A draw walks at most ${MAX_DRAW_DEPTH} tables; ${outcome.table} would make it deeper.`,
        [{ pointer: `${pointer}/table`, detail: `nests too deep (at most ${MAX_DRAW_DEPTH} tables)` }],
      );
    return { table: outcome.table };
  }

  return {
    async createTable(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'define its drop tables');
      const entries: DropEntry[] = [];
      for (const [i, entry] of input.entries.entries())
        entries.push({
          weight: entry.weight,
          outcome: await checkOutcome(actor, collectionId, entry.outcome, `/body/entries/${i}/outcome`),
        });
      const em = orm.em.fork();
      const table = em.create(DropTable, {
        id: newId('dtb'),
        collectionId,
        name: input.name,
        entries,
        hash: tableHashOf(entries),
        createdBy: actor.userId,
        createdAt: new Date(),
      });
      await flushAudited(em, () =>
        auditDraft(
          'dropTable.created',
          { type: 'dropTable', id: table.id, ownerId: collection.ownerId, collectionId },
          {
            after: tableView(table),
          },
        ),
      );
      return tableView(table);
    },

    async getTable(id) {
      return tableView(await tableOf(id));
    },

    async createBox(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'define its loot boxes');
      const table = await tableOf(input.table).catch(() => undefined);
      if (!table || table.collectionId !== collectionId)
        throw new NotFoundError(`No drop table ${input.table} in the collection ${collectionId}.`);
      if (input.pity && input.pity.entry >= table.entries.length)
        throw new ValidationError(`The table ${table.id} has ${table.entries.length} entries.`, [
          { pointer: '/body/pity/entry', detail: `must be below ${table.entries.length}` },
        ]);
      const exists = () =>
        new ConflictError(
          `The collection ${collectionId} already has a loot box named ${input.name}.`,
          '/problems/loot-box-exists',
        );
      const em = orm.em.fork();
      if (await em.count(LootBox, { collectionId, name: input.name })) throw exists();
      const box = em.create(LootBox, {
        id: newId('lbx'),
        collectionId,
        name: input.name,
        tableId: table.id,
        paid: input.paid,
        pityAfter: input.pity?.after ?? null,
        pityEntry: input.pity?.entry ?? null,
        createdBy: actor.userId,
        createdAt: new Date(),
      });
      try {
        await flushAudited(em, () =>
          auditDraft(
            'lootBox.created',
            { type: 'lootBox', id: box.id, ownerId: collection.ownerId, collectionId },
            {
              after: boxView(box),
            },
          ),
        );
      } catch (error) {
        if (await orm.em.fork().count(LootBox, { collectionId, name: input.name })) throw exists();
        throw error;
      }
      return boxView(box);
    },

    async listBoxes(collectionId, { limit, cursor }) {
      await collectionOf(collectionId);
      const rows = await pageById(orm.em.fork(), LootBox, [{ collectionId }], {
        list: 'loot-boxes',
        order: 'oldest',
        limit,
        cursor,
      });
      return mapPage(rows, (box) => boxView(box));
    },

    async getBox(id, wallet) {
      return boxView(await readBox(id), wallet);
    },
  };
}

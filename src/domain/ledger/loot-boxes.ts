// Loot boxes and verifiable draws (issue 36). A studio defines drop tables (weighted outcomes,
// nested tables allowed, immutable, odds published as exact fractions) and loot boxes (every NFT of
// a collection and name opens by a draw from a table, optionally with pity). Opening a box is ONE
// ledger plan through the one ledger store:
//   guards: the wallet's draw seed still active at the nonce the draw used (`seedAt`, which locks the
//           seed: a wallet's openings take its nonces one at a time), the wallet's pity counter as
//           read (`pityAt`), the box held by the wallet and burnable (the leg writer's guards), each
//           minted currency within its max supply;
//   rows:   the box burned, the outcome minted, the seed's next nonce, the pity counter, the draw
//           row, the events (`newTransfer`, `newNFT`s, `lootBoxOpened`), one `op_` id, one
//           idempotency record.
// The draw follows from published inputs only (./draw-algorithm.ts, gats-draw-v1): the server seed
// (committed to before, revealed by its wallet after), the player's client seed, the nonce, the
// tables' ids and hashes. A refused plan draws nothing and uses no nonce; a retry with the same
// Idempotency-Key answers the same draw.

import { randomBytes } from 'node:crypto';
import type { components } from '../../../generated/openapi/types.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import type { Database } from '../../db/database.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { Collection } from '../../db/entities/Collection.ts';
import {
  DrawRecord,
  DrawSeed,
  type DropEntry,
  DropTable,
  LootBox,
  LootBoxPity,
} from '../../db/entities/LootBox.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { auditDraft, flushAudited } from '../audit.ts';
import { assertCollectionPowers, assertCreatorMayGrant, mayMintCurrency } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { isChainAssetId } from './chain-assets.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import {
  DRAW_ALGORITHM,
  fraction,
  MAX_DRAW_DEPTH,
  pickEntry,
  seedCommitment,
  tableHashOf,
  uniformRoll,
} from './draw-algorithm.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import type { Leg } from './legs.ts';
import { currencyMintParts, MaxSupplyExceededError, nftMintParts } from './mints.ts';
import { actingNow } from './recipes.ts';
import type { BalanceChange, Guard, GuardFailure, NewAsset, NewEvent, NewTransfer } from './store/plan.ts';
import type { AssetView, TransferView } from './views.ts';
import { earlierAnswerOr } from './writes.ts';

type Schemas = components['schemas'];
export type DropOutcome = Schemas['DropOutcome'];
export type DropTableView = Schemas['DropTable'];
export type LootBoxView = Schemas['LootBox'];
export type DrawSeedView = Schemas['DrawSeed'];
export type DrawView = Schemas['Draw'];
export type OpenedLootBoxView = Schemas['OpenedLootBox'];

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

export interface OpenInput {
  wallet: StoredAddress;
  assetId: string;
  clientSeed: string;
  seedCommitment: string;
}

export interface LootBoxService {
  createTable(actor: Actor, collectionId: string, input: CreateDropTableInput): Promise<DropTableView>;
  getTable(id: string): Promise<DropTableView>;
  createBox(actor: Actor, collectionId: string, input: CreateLootBoxInput): Promise<LootBoxView>;
  listBoxes(collectionId: string, options: { limit: number; cursor?: string }): Promise<Page<LootBoxView>>;
  getBox(id: string, wallet?: StoredAddress): Promise<LootBoxView>;
  /** The wallet's active seed (created at its first call), as a commitment. */
  commitSeed(actor: Actor, wallet: StoredAddress): Promise<DrawSeedView>;
  getSeed(id: string): Promise<DrawSeedView>;
  /** Publishes the seed and commits the wallet's next one. */
  revealSeed(actor: Actor, id: string): Promise<{ revealed: DrawSeedView; next: DrawSeedView }>;
  open(
    actor: Actor,
    boxId: string,
    input: OpenInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<OpenedLootBoxView>>;
  getDraw(id: string): Promise<DrawView>;
}

export class DrawSeedChangedError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/draw-seed-changed');
  }
}

class NotALootBoxError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/not-a-loot-box');
  }
}

/** How many times an opening is planned again when another opening of the wallet took its nonce. */
const OPEN_ATTEMPTS = 5;

const tableNotFound = (id: string) => new NotFoundError(`No drop table with id ${id}.`);
const boxNotFound = (id: string) => new NotFoundError(`No loot box with id ${id}.`);
const seedContext = (id: string) => `draw-seed:${id}`;

function seedView(seed: DrawSeed): DrawSeedView {
  return {
    id: seed.id,
    wallet: formatAddress(seed.wallet),
    commitment: seed.commitment,
    status: seed.status,
    nextNonce: seed.nextNonce,
    serverSeed: seed.serverSeed ?? null,
    createdAt: seed.createdAt.toISOString(),
    revealedAt: seed.revealedAt?.toISOString() ?? null,
  };
}

function totalOf(entries: DropEntry[]): bigint {
  return entries.reduce((sum, entry) => sum + BigInt(entry.weight), 0n);
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

export function createLootBoxService(
  { orm, reads }: Database,
  idempotency: Idempotency,
  writer: LegWriter,
  secretBox: SecretBox,
): LootBoxService {
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

  /** How many tables a draw from `table` walks at most (itself included). */
  async function depthOf(table: DropTable): Promise<number> {
    let deepest = 0;
    for (const entry of table.entries)
      if (entry.outcome !== null && 'table' in entry.outcome)
        deepest = Math.max(deepest, await depthOf(await tableOf(entry.outcome.table)));
    return deepest + 1;
  }

  async function readBox(id: string): Promise<LootBox> {
    const box = await orm.em.fork().findOne(LootBox, { id });
    if (!box) throw boxNotFound(id);
    return box;
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

  async function activeSeed(wallet: StoredAddress): Promise<DrawSeed | null> {
    return orm.em.fork().findOne(DrawSeed, { activeKey: wallet });
  }

  async function newSeed(wallet: StoredAddress): Promise<DrawSeed> {
    const em = orm.em.fork();
    const id = newId('dsd');
    const secret = randomBytes(32).toString('hex');
    const seed = em.create(DrawSeed, {
      id,
      wallet,
      activeKey: wallet,
      status: 'active',
      commitment: seedCommitment(secret),
      sealedSeed: secretBox.seal(secret, seedContext(id)),
      serverSeed: null,
      nextNonce: 0,
      createdAt: new Date(),
      revealedAt: null,
    });
    try {
      await em.flush();
      return seed;
    } catch (error) {
      // Another call committed the wallet's active seed first (the unique active key): answer it.
      const existing = await activeSeed(wallet);
      if (existing) return existing;
      throw error;
    }
  }

  /** The outcome's mints to `wallet`, its granted lines and the supply guards (max per currency). */
  async function mintsOf(actor: Actor, box: LootBox, outcome: DropOutcome, wallet: StoredAddress, at: Date) {
    const parts = {
      assets: [] as NewAsset[],
      balances: [] as BalanceChange[],
      transfers: [] as NewTransfer[],
      events: [] as NewEvent[],
      minted: [] as TransferView[],
      nfts: [] as AssetView[],
      granted: [] as { assetId: string; amount: string }[],
      caps: new Map<string, { delta: bigint; max: bigint; decimals: number }>(),
    };
    const items =
      outcome === null
        ? []
        : 'bundle' in outcome
          ? outcome.bundle
          : 'nft' in outcome || 'assetId' in outcome
            ? [outcome]
            : [];
    for (const item of items) {
      if ('nft' in item) {
        const nft = nftMintParts(item.nft, box.collectionId, box.createdBy, wallet, at);
        parts.assets.push(nft.asset);
        parts.balances.push(nft.balance);
        parts.events.push(nft.event);
        parts.nfts.push(nft.view);
        parts.granted.push({ assetId: nft.asset.id, amount: '1' });
        continue;
      }
      const currency = await writer.factsOf(item.assetId);
      const amount = parseAmount(item.amount, currency.decimals, { pointer: '/body', positive: true });
      const mint = currencyMintParts(
        { id: currency.id, collectionId: box.collectionId, decimals: currency.decimals },
        wallet,
        amount,
        actor.userId,
        at,
      );
      parts.balances.push(mint.balance);
      parts.transfers.push(mint.transfer);
      parts.events.push(mint.event);
      parts.minted.push(mint.view);
      parts.granted.push({ assetId: currency.id, amount: formatAmount(amount, currency.decimals) });
      const cap = parts.caps.get(currency.id);
      if (cap) cap.delta += amount;
      else {
        const row = await orm.em.fork().findOneOrFail(Asset, { id: currency.id }, { fields: ['maxSupply'] });
        parts.caps.set(currency.id, {
          delta: amount,
          max: (row.maxSupply as bigint | null | undefined) ?? UINT256_MAX,
          decimals: currency.decimals,
        });
      }
    }
    return parts;
  }

  /** One attempt at an opening: the draw from the state read now, applied as one plan. */
  async function openOnce(
    actor: Actor,
    boxId: string,
    input: OpenInput,
    key: ReturnType<Idempotency['keyOf']>,
  ): Promise<WriteResult<OpenedLootBoxView> | { retry: GuardFailure }> {
    const at = new Date();
    const operationId = newId('op');
    let prepared: {
      box: LootBox;
      seed: DrawSeed;
      leg: Leg;
      draw: DrawView;
      countAfter: number;
      countBefore: number;
      mints: Awaited<ReturnType<typeof mintsOf>>;
    };
    try {
      const box = await readBox(boxId);
      await writer.assertControls(actor, [
        { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
      ]);
      const asset = await orm.em
        .fork()
        .findOne(Asset, { id: input.assetId }, { fields: ['kind', 'name', 'collection'] });
      if (!asset) throw new NotFoundError(`No asset with id ${input.assetId}.`);
      if (asset.kind !== 'nft' || asset.collection.id !== box.collectionId || asset.name !== box.name)
        throw new NotALootBoxError(
          `${input.assetId} is not a ${box.name} of ${box.collectionId}: the loot box ${boxId} opens those only.`,
        );
      const seed = await activeSeed(input.wallet);
      if (!seed || seed.commitment !== input.seedCommitment)
        throw new DrawSeedChangedError(
          `${input.seedCommitment} is not the active draw seed of ${formatAddress(input.wallet)}${seed ? ` (it is ${seed.commitment})` : ''}: read it again (POST /api/v1/draw-seeds).`,
        );
      assertCreatorMayGrant(
        await actingNow(reads, box.createdBy),
        await collectionOf(box.collectionId),
        'loot box',
      );
      const countBefore =
        (await orm.em.fork().findOne(LootBoxPity, { boxId, wallet: input.wallet }))?.count ?? 0;
      const serverSeed = secretBox.open(seed.sealedSeed, seedContext(seed.id));
      // The draw: roll 0 in the box's table, then one roll per nested table.
      const rolls: DrawView['rolls'] = [];
      let table = await tableOf(box.tableId);
      const pityApplies = box.pityAfter != null && countBefore + 1 >= box.pityAfter;
      let topEntry = -1;
      let outcome: DropOutcome;
      for (;;) {
        const weights = table.entries.map((entry) => BigInt(entry.weight));
        const total = totalOf(table.entries);
        const { value, attempts } = uniformRoll(
          serverSeed,
          {
            clientSeed: input.clientSeed,
            nonce: seed.nextNonce,
            roll: rolls.length,
            tableId: table.id,
            tableHash: table.hash,
          },
          total,
        );
        const entry = pickEntry(weights, value);
        rolls.push({
          tableId: table.id,
          tableHash: table.hash,
          total: String(total),
          value: String(value),
          attempts,
          entry,
        });
        // Pity replaces the first roll's entry (the roll is still published).
        const given = rolls.length === 1 && pityApplies ? (box.pityEntry ?? 0) : entry;
        if (rolls.length === 1) topEntry = given;
        outcome = table.entries[given].outcome;
        if (outcome === null || !('table' in outcome)) break;
        table = await tableOf(outcome.table);
      }
      const countAfter = box.pityAfter != null && topEntry === box.pityEntry ? 0 : countBefore + 1;
      const mints = await mintsOf(actor, box, outcome, input.wallet, at);
      const draw: DrawView = {
        id: operationId,
        algorithm: DRAW_ALGORITHM,
        box: box.id,
        assetId: input.assetId,
        wallet: formatAddress(input.wallet),
        seed: seed.id,
        commitment: seed.commitment,
        nonce: seed.nextNonce,
        clientSeed: input.clientSeed,
        rolls,
        pity:
          box.pityAfter != null
            ? { after: box.pityAfter, entry: box.pityEntry ?? 0, countBefore, applied: pityApplies }
            : null,
        outcome,
        granted: mints.granted,
        createdAt: at.toISOString(),
      };
      const leg: Leg = {
        asset: await writer.factsOf(input.assetId),
        amount: 1n,
        from: input.wallet,
        to: ZERO_ADDRESS,
        place: { pointer: '/body/assetId', label: '' },
      };
      prepared = { box, seed, leg, draw, countAfter, countBefore, mints };
    } catch (error) {
      return earlierAnswerOr(idempotency, key, error);
    }
    const { box, seed, leg, draw, countAfter, countBefore, mints } = prepared;
    const guards: Guard[] = [];
    const supplies: { assetId: string; delta: bigint }[] = [];
    for (const [assetId, { delta, max }] of mints.caps) {
      guards.push({ kind: 'supplyWithin', assetId, adding: delta, max });
      supplies.push({ assetId, delta });
    }
    let retry: GuardFailure | undefined;
    try {
      return await writer.apply(
        actor,
        [leg],
        key,
        at,
        ([burned]) => ({
          status: 201,
          body: { id: operationId, draw, transfers: [burned, ...mints.minted], nfts: mints.nfts },
          headers: {},
        }),
        {
          leading: [
            { kind: 'seedAt', seedId: seed.id, wallet: input.wallet, nonce: seed.nextNonce },
            ...(box.pityAfter != null
              ? [{ kind: 'pityAt' as const, boxId: box.id, wallet: input.wallet, count: countBefore }]
              : []),
          ],
          guards,
          assets: mints.assets,
          balances: mints.balances,
          supplies,
          transfers: mints.transfers,
          events: [
            ...mints.events,
            {
              type: 'lootBoxOpened',
              occurredAt: at,
              data: draw,
              assetId: input.assetId,
              collectionId: box.collectionId,
              wallets: [input.wallet],
              fromWallet: input.wallet,
              toWallet: null,
            },
          ],
          operationId,
          stores: {
            seedNonces: [{ seedId: seed.id, next: seed.nextNonce + 1 }],
            ...(box.pityAfter != null && {
              pityCounts: [{ boxId: box.id, wallet: input.wallet, count: countAfter }],
            }),
            draws: [
              {
                id: operationId,
                boxId: box.id,
                assetId: input.assetId,
                wallet: input.wallet,
                seedId: seed.id,
                nonce: seed.nextNonce,
                data: draw,
                createdAt: at,
              },
            ],
          },
          refuse: (failure) => {
            const { guard } = failure;
            if (guard.kind === 'seedAt' && failure.reason === 'revealed')
              return new DrawSeedChangedError(
                `The draw seed ${seed.id} was revealed meanwhile: read the wallet's active seed again (POST /api/v1/draw-seeds).`,
              );
            if (guard.kind === 'seedAt' || guard.kind === 'pityAt') {
              retry = failure;
              return new Error('another opening of the wallet took the nonce');
            }
            return undefined;
          },
          rejected: (failure) => {
            const { guard, found = 0n } = failure;
            const cap = guard.kind === 'supplyWithin' ? mints.caps.get(guard.assetId) : undefined;
            if (guard.kind !== 'supplyWithin' || !cap) return new Error(`Unexpected guard ${guard.kind}.`);
            return new MaxSupplyExceededError(
              `The outcome mints ${formatAmount(cap.delta, cap.decimals)} ${guard.assetId}, which would bring the supply to ${formatAmount(found + cap.delta, cap.decimals)}, past its max supply ${formatAmount(cap.max, cap.decimals)}.`,
            );
          },
        },
      );
    } catch (error) {
      if (retry) return { retry };
      throw error;
    }
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

    async commitSeed(actor, wallet) {
      await writer.assertControls(actor, [{ from: wallet, place: { pointer: '/body/wallet', label: '' } }]);
      return seedView((await activeSeed(wallet)) ?? (await newSeed(wallet)));
    },

    async getSeed(id) {
      const seed = await orm.em.fork().findOne(DrawSeed, { id });
      if (!seed) throw new NotFoundError(`No draw seed with id ${id}.`);
      return seedView(seed);
    },

    async revealSeed(actor, id) {
      const seed = await orm.em.fork().findOne(DrawSeed, { id });
      if (!seed) throw new NotFoundError(`No draw seed with id ${id}.`);
      await writer.assertControls(actor, [
        { from: seed.wallet as StoredAddress, place: { pointer: '/path/seed_id', label: '' } },
      ]);
      const serverSeed = secretBox.open(seed.sealedSeed, seedContext(seed.id));
      const revealedAt = new Date();
      // Only an active seed reveals (an opening in flight holds the row until it commits).
      const changed = await orm.em
        .fork()
        .nativeUpdate(
          DrawSeed,
          { id, status: 'active' },
          { status: 'revealed', activeKey: null, serverSeed, revealedAt },
        );
      if (changed !== 1) throw new DrawSeedChangedError(`The draw seed ${id} was already revealed.`);
      const revealed = await orm.em.fork().findOneOrFail(DrawSeed, { id });
      const next = await newSeed(seed.wallet as StoredAddress);
      return { revealed: seedView(revealed), next: seedView(next) };
    },

    async open(actor, boxId, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'openLootBox',
        key: idempotencyKey,
        request: { boxId, ...input },
      });
      let last: GuardFailure | undefined;
      for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
        const outcome = await openOnce(actor, boxId, input, key);
        if (!('retry' in outcome)) return outcome;
        last = outcome.retry;
      }
      throw new DrawSeedChangedError(
        `Other openings of ${formatAddress(input.wallet)} kept taking its next nonce (${last?.guard.kind}); try again.`,
      );
    },

    async getDraw(id) {
      const draw = await orm.em.fork().findOne(DrawRecord, { id });
      if (!draw) throw new NotFoundError(`No draw with id ${id}.`);
      return draw.data;
    },
  };
}

// Opening a loot box (issue 36): ONE ledger plan through the leg writer (described in
// ./loot-boxes.ts): the box checked, the draw from published inputs only (./draw-algorithm.ts,
// gats-draw-v1: the server seed, the player's client seed, the nonce, the tables' ids and hashes),
// the box burned, the outcome minted, the seed's next nonce, the pity counter, the draw row and its
// events. An opening that another opening of the wallet beat to the nonce (or the pity counter) is
// planned again; a refused plan draws nothing and uses no nonce.

import type { components } from '../../../generated/openapi/types.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { DrawRecord, type DrawSeed, type LootBox, LootBoxPity } from '../../db/entities/LootBox.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { assertCreatorMayGrant } from '../authorization.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import { DRAW_ALGORITHM, pickEntry, uniformRoll } from './draw-algorithm.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { Leg } from './legs.ts';
import { DrawSeedChangedError, type LootBoxContext, seedContext, totalOf } from './loot-box-context.ts';
import type { DropOutcome } from './loot-box-definitions.ts';
import { currencyMintParts, MaxSupplyExceededError, nftMintParts } from './mints.ts';
import { actingNow } from './recipes.ts';
import type { BalanceChange, Guard, GuardFailure, NewAsset, NewEvent, NewTransfer } from './store/plan.ts';
import type { AssetView, TransferView } from './views.ts';
import { earlierAnswerOr } from './writes.ts';

type Schemas = components['schemas'];
type DrawView = Schemas['Draw'];
export type OpenedLootBoxView = Schemas['OpenedLootBox'];

export interface OpenInput {
  wallet: StoredAddress;
  assetId: string;
  clientSeed: string;
  seedCommitment: string;
}

export interface LootBoxOpeningMethods {
  open(
    actor: Actor,
    boxId: string,
    input: OpenInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<OpenedLootBoxView>>;
  getDraw(id: string): Promise<DrawView>;
}

class NotALootBoxError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/not-a-loot-box');
  }
}

/** How many times an opening is planned again when another opening of the wallet took its nonce. */
const OPEN_ATTEMPTS = 5;

export function createLootBoxOpeningMethods(ctx: LootBoxContext): LootBoxOpeningMethods {
  const { orm, idempotency, writer, secretBox, collectionOf, tableOf, readBox, activeSeed } = ctx;

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

  /**
   * The draw: roll 0 in the box's table, then one roll per nested table; pity replaces the first
   * roll's entry (the roll is still published).
   */
  async function drawFrom(
    box: LootBox,
    seed: DrawSeed,
    serverSeed: string,
    clientSeed: string,
    pityApplies: boolean,
  ) {
    const rolls: DrawView['rolls'] = [];
    let table = await tableOf(box.tableId);
    let topEntry = -1;
    let outcome: DropOutcome;
    for (;;) {
      const weights = table.entries.map((entry) => BigInt(entry.weight));
      const total = totalOf(table.entries);
      const { value, attempts } = uniformRoll(
        serverSeed,
        {
          clientSeed,
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
    return { rolls, topEntry, outcome };
  }

  /**
   * An opening checked and drawn from the state read now: the box and the NFT opening it, the
   * wallet's active seed as the player committed to it, the creator still allowed to grant, the
   * pity counter, the draw, its mints and the box's burn.
   */
  async function prepareOpening(
    actor: Actor,
    boxId: string,
    input: OpenInput,
    at: Date,
    operationId: string,
  ) {
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
      await actingNow(orm, box.createdBy),
      await collectionOf(box.collectionId),
      'loot box',
    );
    const countBefore =
      (await orm.em.fork().findOne(LootBoxPity, { boxId, wallet: input.wallet }))?.count ?? 0;
    const serverSeed = secretBox.open(seed.sealedSeed, seedContext(seed.id));
    const pityApplies = box.pityAfter != null && countBefore + 1 >= box.pityAfter;
    const { rolls, topEntry, outcome } = await drawFrom(box, seed, serverSeed, input.clientSeed, pityApplies);
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
    return { box, seed, leg, draw, countAfter, countBefore, mints };
  }

  /**
   * The opening's rows besides the burn: the guards (the seed at its nonce, the pity counter as
   * read, each minted currency's supply), the mints, the events, the seed's next nonce, the pity
   * counter and the draw row.
   */
  function openingRows(
    prepared: Awaited<ReturnType<typeof prepareOpening>>,
    input: OpenInput,
    at: Date,
    operationId: string,
  ) {
    const { box, seed, draw, countAfter, countBefore, mints } = prepared;
    const guards: Guard[] = [];
    const supplies: { assetId: string; delta: bigint }[] = [];
    for (const [assetId, { delta, max }] of mints.caps) {
      guards.push({ kind: 'supplyWithin', assetId, adding: delta, max });
      supplies.push({ assetId, delta });
    }
    const leading: Guard[] = [
      { kind: 'seedAt', seedId: seed.id, wallet: input.wallet, nonce: seed.nextNonce },
      ...(box.pityAfter != null
        ? [{ kind: 'pityAt' as const, boxId: box.id, wallet: input.wallet, count: countBefore }]
        : []),
    ];
    const events: NewEvent[] = [
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
    ];
    return {
      leading,
      guards,
      assets: mints.assets,
      balances: mints.balances,
      supplies,
      transfers: mints.transfers,
      events,
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
    };
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
    let prepared: Awaited<ReturnType<typeof prepareOpening>>;
    try {
      prepared = await prepareOpening(actor, boxId, input, at, operationId);
    } catch (error) {
      return earlierAnswerOr(idempotency, key, error);
    }
    const { seed, leg, draw, mints } = prepared;
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
          ...openingRows(prepared, input, at, operationId),
          operationId,
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

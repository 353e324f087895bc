// Opening a loot box (issue 36): ONE ledger plan through the leg writer (described in
// ./loot-boxes.ts): the box checked, the draw from published inputs only (./draw-algorithm.ts,
// gats-draw-v1: the server seed, the player's client seed, the nonce, the tables' ids and hashes),
// the box burned, the outcome minted, the seed's next nonce, the pity counter, the draw row and its
// events. An opening that another opening of the wallet beat to the nonce (or the pity counter) is
// planned again; a refused plan draws nothing and uses no nonce. The draw and the plan's rows are
// ./loot-box-opening-parts.ts.

import type { components } from '../../../generated/openapi/types.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { DrawRecord, LootBoxPity } from '../../db/entities/LootBox.ts';
import { assertCreatorMayGrant } from '../authorization.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import { DRAW_ALGORITHM } from './draw-algorithm.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { Leg } from './legs.ts';
import { DrawSeedChangedError, type LootBoxContext, seedContext } from './loot-box-context.ts';
import { drawFrom, mintsOf, type OpenInput, type Opening, openingRows } from './loot-box-opening-parts.ts';
import { MaxSupplyExceededError } from './mints.ts';
import { actingNow } from './recipes.ts';
import type { GuardFailure } from './store/plan.ts';
import { earlierAnswerOr } from './writes.ts';

type Schemas = components['schemas'];
type DrawView = Schemas['Draw'];
type OpenedLootBoxView = Schemas['OpenedLootBox'];

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
  const { orm, reads, idempotency, writer, secretBox, collectionOf, tableOf, readBox, activeSeed } = ctx;

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
  ): Promise<Opening> {
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
    const pityApplies = box.pityAfter != null && countBefore + 1 >= box.pityAfter;
    const { rolls, topEntry, outcome } = await drawFrom(
      tableOf,
      box,
      seed,
      serverSeed,
      input.clientSeed,
      pityApplies,
    );
    const countAfter = box.pityAfter != null && topEntry === box.pityEntry ? 0 : countBefore + 1;
    const mints = await mintsOf(ctx, actor, box, outcome, input.wallet, at);
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

  /** One attempt at an opening: the draw from the state read now, applied as one plan. */
  async function openOnce(
    actor: Actor,
    boxId: string,
    input: OpenInput,
    key: ReturnType<Idempotency['keyOf']>,
  ): Promise<WriteResult<OpenedLootBoxView> | { retry: GuardFailure }> {
    const at = new Date();
    const operationId = newId('op');
    let prepared: Opening;
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

// Crafting (issue 21): recipes, created by the studio that owns a collection, and crafts. A recipe is
// configuration (a plain row, like a collection); a craft is ONE ledger plan: the recipe's inputs
// burned from the crafter's wallet exactly as burns are (the transfer service's leg writer: control,
// holds, a transfer to the zero address), its outputs minted to the same wallet exactly as mints are
// (./assets.ts: new NFTs, currency supply within maxSupply), one `op_` id over all of it, all or
// nothing.

import type { Database } from '../../db/database.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { Collection } from '../../db/entities/Collection.ts';
import { Recipe } from '../../db/entities/Recipe.ts';
import type { UserRole } from '../../db/entities/User.ts';
import type { ReadStatements } from '../../db/read-statements.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { auditDraft, flushAudited } from '../audit.ts';
import { assertRecipeMayMint, effectiveServiceRole } from '../authorization.ts';
import { AppError, type FieldError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, labelledAmount, parseAmount } from './amounts.ts';
import type { AssetRow } from './asset-rows.ts';
import { isChainAssetId } from './chain-assets.ts';
import { mintedCurrencyAmount, requireMintableCollection } from './collections.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import type { Leg } from './legs.ts';
import { currencyMintParts, MaxSupplyExceededError, nftMintParts } from './mints.ts';
import type { BalanceChange, Guard, NewAsset, NewEvent, NewTransfer } from './store/plan.ts';
import type { AssetView, RecipeInputView, RecipeOutputView, RecipeView, TransferView } from './views.ts';
import { earlierAnswerOr } from './writes.ts';

export interface CreateRecipeInput {
  name: string;
  inputs: RecipeInputView[];
  outputs: RecipeOutputView[];
}

export interface CraftInput {
  wallet: StoredAddress;
  /** The NFTs consumed for the recipe's NFT inputs, one per NFT input. */
  nfts?: string[];
}

export interface CraftView {
  id: string;
  recipe: string;
  burned: TransferView[];
  minted: TransferView[];
  nfts: AssetView[];
}

export interface RecipeService {
  create(actor: Actor, collectionId: string, input: CreateRecipeInput): Promise<RecipeView>;
  list(collectionId: string, options: { limit: number; cursor?: string }): Promise<Page<RecipeView>>;
  get(id: string): Promise<RecipeView>;
  /** Burns the inputs from `wallet` and mints the outputs to it, as one plan; one `op_` id. */
  craft(
    actor: Actor,
    recipeId: string,
    input: CraftInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<CraftView>>;
}

/** 422: the craft's named NFTs do not match the recipe's NFT inputs. */
export class RecipeInputMismatchError extends AppError {
  constructor(detail: string, errors: FieldError[]) {
    super(422, '/problems/recipe-input-mismatch', { detail, errors });
  }
}

function recipeView(recipe: Recipe): RecipeView {
  return {
    id: recipe.id,
    collection: recipe.collection.id,
    name: recipe.name,
    inputs: recipe.inputs,
    outputs: recipe.outputs,
    createdBy: recipe.creator.id,
    createdAt: recipe.createdAt.toISOString(),
  };
}

function recipeNotFound(id: string): NotFoundError {
  return new NotFoundError(`No recipe with id ${id}.`);
}

/** Parses a recipe amount of a currency, its problem naming the item (`Input 0: ...`). */
const NFT_ROWS = 'select id, kind, name, collection_id, owner from asset where id = ?';
type NftRow = Pick<AssetRow, 'id' | 'kind' | 'name' | 'collection_id' | 'owner'>;

/** What a craft needs of a recipe; a recipe never changes once created. */
interface CraftRecipe {
  collectionId: string;
  /** The collection's owner (a collection never changes hands). */
  collectionOwnerId: string;
  creatorId: string;
  inputs: RecipeInputView[];
  outputs: RecipeOutputView[];
}

/** More recipes than any deployment has; past it the cache starts over (it only saves a read). */
const RECIPE_CACHE_LIMIT = 10_000;

const ACTING_NOW =
  'select u.role, s.id as account, o.role as owner_role from users u ' +
  'left join service_account s on s.id = u.id left join users o on o.id = s.owner_id where u.id = ?';
/**
 * A row of ACTING_NOW: a service account's row carries its id and its owner's role (service_account's
 * owner_id references users), any other user's neither.
 */
type ActingNowRow = { role: UserRole } & (
  | { account: null; owner_role: null }
  | { account: string; owner_role: UserRole }
);

/**
 * A user as it acts now: its current role, a service account's capped by its owner's current role.
 * What a recipe's craft or a store offer's purchase (./store-purchase.ts) mints with.
 */
export async function actingNow(reads: ReadStatements, userId: string): Promise<Actor> {
  // One prepared read (was two ORM reads, one populating the owner: a large part of a purchase's CPU).
  const [row] = await reads.all<ActingNowRow>(ACTING_NOW, [userId]);
  if (!row) throw new Error(`No user ${userId}.`);
  return {
    userId,
    role: row.account == null ? row.role : effectiveServiceRole(row.role, row.owner_role),
  };
}

export function createRecipeService(
  { orm, reads }: Database,
  idempotency: Idempotency,
  writer: LegWriter,
): RecipeService {
  // Kept for the life of the process: recipes and a currency's cap are immutable.
  const recipes = new Map<string, CraftRecipe>();
  const caps = new Map<string, bigint | null>();

  async function craftRecipeOf(id: string): Promise<CraftRecipe> {
    const known = recipes.get(id);
    if (known) return known;
    const recipe = await orm.em.fork().findOne(Recipe, { id }, { populate: ['collection'] });
    if (!recipe) throw recipeNotFound(id);
    const found = {
      collectionId: recipe.collection.id,
      collectionOwnerId: recipe.collection.getEntity().owner.id,
      creatorId: recipe.creator.id,
      inputs: recipe.inputs,
      outputs: recipe.outputs,
    };
    if (recipes.size >= RECIPE_CACHE_LIMIT) recipes.clear();
    recipes.set(id, found);
    return found;
  }

  /** The recipe's creator as it acts now (never cached: a demotion counts at the next craft). */
  const creatorNow = (creatorId: string) => actingNow(reads, creatorId);

  async function maxSupplyOf(currencyId: string): Promise<bigint | null> {
    if (caps.has(currencyId)) return caps.get(currencyId) ?? null;
    const currency = await orm.em.fork().findOneOrFail(Asset, { id: currencyId });
    const max = currency.maxSupply ?? null;
    if (caps.size >= RECIPE_CACHE_LIMIT) caps.clear();
    caps.set(currencyId, max);
    return max;
  }

  /** A recipe's currency (an input of any collection, or an output of `outputOf`'s collection). */
  async function currencyOf(assetId: string, label: string, pointer: string) {
    if (isChainAssetId(assetId))
      throw new ValidationError(`${label}: ${assetId} is an on-chain token; recipes use ledger currencies.`, [
        { pointer, detail: 'must be a ledger currency' },
      ]);
    let facts: Awaited<ReturnType<LegWriter['factsOf']>>;
    try {
      facts = await writer.factsOf(assetId);
    } catch (error) {
      if (error instanceof NotFoundError) throw new NotFoundError(`${label}: no asset with id ${assetId}.`);
      throw error;
    }
    if (facts.kind !== 'fungible')
      throw new ValidationError(
        `${label}: ${assetId} is not a currency; name an NFT input by its collection and name.`,
        [{ pointer, detail: 'must be a currency' }],
      );
    return facts;
  }

  return {
    async create(actor, collectionId, input) {
      const em = orm.em.fork();
      const { owner } = await requireMintableCollection(em, actor, collectionId);
      const inputs: RecipeInputView[] = [];
      for (const [i, item] of input.inputs.entries()) {
        const label = `Input ${i}`;
        if ('nft' in item) {
          if (!(await em.count(Collection, { id: item.nft.collection })))
            throw new NotFoundError(`${label}: no collection with id ${item.nft.collection}.`);
          inputs.push({ nft: { collection: item.nft.collection, name: item.nft.name } });
          continue;
        }
        const currency = await currencyOf(item.assetId, label, `/body/inputs/${i}/assetId`);
        const amount = labelledAmount(item.amount, currency.decimals, label, `/body/inputs/${i}/amount`);
        inputs.push({ assetId: item.assetId, amount: formatAmount(amount, currency.decimals) });
      }
      const outputs: RecipeOutputView[] = [];
      for (const [i, item] of input.outputs.entries()) {
        const label = `Output ${i}`;
        if ('nft' in item) {
          outputs.push({ nft: item.nft });
          continue;
        }
        const amount = await mintedCurrencyAmount(em, actor, collectionId, item, label, `/body/outputs/${i}`);
        outputs.push({ assetId: item.assetId, amount });
      }
      const recipe = em.create(Recipe, {
        id: newId('rcp'),
        collection: collectionId,
        name: input.name,
        inputs,
        outputs,
        creator: actor.userId,
        createdAt: new Date(),
      });
      await flushAudited(em, () =>
        auditDraft(
          'recipe.created',
          { type: 'recipe', id: recipe.id, ownerId: owner.id, collectionId },
          {
            after: recipeView(recipe),
          },
        ),
      );
      return recipeView(recipe);
    },

    async list(collectionId, { limit, cursor }) {
      const em = orm.em.fork();
      if (!(await em.count(Collection, { id: collectionId })))
        throw new NotFoundError(`No collection with id ${collectionId}.`);
      const rows = await pageById(em, Recipe, [{ collection: collectionId }], {
        list: 'recipes',
        order: 'oldest',
        limit,
        cursor,
      });
      return mapPage(rows, recipeView);
    },

    async get(id) {
      const recipe = await orm.em.fork().findOne(Recipe, { id });
      if (!recipe) throw recipeNotFound(id);
      return recipeView(recipe);
    },

    async craft(actor, recipeId, input, idempotencyKey) {
      const nftIds = input.nfts ?? [];
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'craftRecipe',
        key: idempotencyKey,
        request: { recipeId, wallet: input.wallet, nfts: nftIds },
      });
      const at = new Date();
      const legs: Leg[] = [];
      const extra = {
        guards: [] as Guard[],
        assets: [] as NewAsset[],
        balances: [] as BalanceChange[],
        supplies: [] as { assetId: string; delta: bigint }[],
        transfers: [] as NewTransfer[],
        events: [] as NewEvent[],
      };
      const minted: TransferView[] = [];
      const nfts: AssetView[] = [];
      const outputCaps = new Map<string, { delta: bigint; max: bigint; decimals: number; output: number }>();
      try {
        const recipe = await craftRecipeOf(recipeId);
        assertRecipeMayMint(await creatorNow(recipe.creatorId), {
          id: recipe.collectionId,
          ownerId: recipe.collectionOwnerId,
        });
        // Control answers before the inputs (403 first); the plan checks it again.
        await writer.assertControls(actor, [
          { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
        ]);
        // The named NFTs, each matched to the first unmatched NFT input of its collection and name.
        const unmatched = new Map<number, { collection: string; name: string }>();
        for (const [i, item] of recipe.inputs.entries()) if ('nft' in item) unmatched.set(i, item.nft);
        const nftLegs = new Map<number, Leg>();
        for (const [j, id] of nftIds.entries()) {
          const pointer = `/body/nfts/${j}`;
          const [row] = await reads.all<NftRow>(NFT_ROWS, [id]);
          if (row?.kind !== 'nft') throw new NotFoundError(`No NFT with id ${id}.`);
          const name = row.name;
          const collection = row.collection_id;
          if (row.owner === ZERO_ADDRESS)
            throw new RecipeInputMismatchError(`${id} (${name} in ${collection}) was burned.`, [
              { pointer, detail: 'was burned' },
            ]);
          const match = [...unmatched.entries()].find(
            ([, nft]) => nft.collection === collection && nft.name === name,
          );
          if (!match)
            throw new RecipeInputMismatchError(
              `${id} (${name} in ${collection}) matches no NFT input of the recipe.`,
              [{ pointer, detail: 'matches no NFT input' }],
            );
          unmatched.delete(match[0]);
          const asset = await writer.factsOf(id);
          nftLegs.set(match[0], {
            asset,
            amount: 1n,
            from: input.wallet,
            to: ZERO_ADDRESS,
            place: { pointer, label: `Input ${match[0]}: ` },
          });
        }
        const [missing] = unmatched.entries();
        if (missing) {
          const [i, nft] = missing;
          throw new RecipeInputMismatchError(
            `Input ${i} (an NFT named ${nft.name} of ${nft.collection}) has no NFT in \`nfts\`.`,
            [{ pointer: '/body/nfts', detail: `lacks an NFT for input ${i}` }],
          );
        }
        for (const [i, item] of recipe.inputs.entries()) {
          const nftLeg = nftLegs.get(i);
          if (nftLeg) {
            legs.push(nftLeg);
            continue;
          }
          if ('nft' in item) continue;
          const asset = await writer.factsOf(item.assetId);
          const place = { pointer: '/body', label: `Input ${i}: ` };
          const amount = parseAmount(item.amount, asset.decimals, { pointer: '/body', positive: true });
          legs.push({ asset, amount, from: input.wallet, to: ZERO_ADDRESS, place });
        }
        for (const [i, item] of recipe.outputs.entries()) {
          if ('nft' in item) {
            const parts = nftMintParts(item.nft, recipe.collectionId, recipe.creatorId, input.wallet, at);
            extra.assets.push(parts.asset);
            extra.balances.push(parts.balance);
            extra.events.push(parts.event);
            nfts.push(parts.view);
            continue;
          }
          const currency = await writer.factsOf(item.assetId);
          const { decimals } = currency;
          const amount = parseAmount(item.amount, decimals, { pointer: '/body', positive: true });
          const parts = currencyMintParts(
            { id: currency.id, collectionId: recipe.collectionId, decimals },
            input.wallet,
            amount,
            actor.userId,
            at,
          );
          const cap = outputCaps.get(currency.id);
          if (cap) cap.delta += amount;
          else
            outputCaps.set(currency.id, {
              delta: amount,
              max: (await maxSupplyOf(currency.id)) ?? UINT256_MAX,
              decimals,
              output: i,
            });
          extra.balances.push(parts.balance);
          extra.transfers.push(parts.transfer);
          extra.events.push(parts.event);
          minted.push(parts.view);
        }
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      for (const [assetId, { delta, max }] of outputCaps) {
        extra.guards.push({ kind: 'supplyWithin', assetId, adding: delta, max });
        extra.supplies.push({ assetId, delta });
      }
      const id = newId('op');
      return writer.apply(
        actor,
        legs,
        key,
        at,
        (burned) => ({ status: 201, body: { id, recipe: recipeId, burned, minted, nfts }, headers: {} }),
        {
          ...extra,
          operationId: id,
          rejected: (failure) => {
            const { guard, found = 0n } = failure;
            if (guard.kind !== 'supplyWithin') return new Error(`Unexpected guard ${guard.kind}.`);
            const { delta, max, decimals, output } = outputCaps.get(guard.assetId) as {
              delta: bigint;
              max: bigint;
              decimals: number;
              output: number;
            };
            return new MaxSupplyExceededError(
              `Output ${output}: crafting mints ${formatAmount(delta, decimals)} ${guard.assetId}, which would bring the supply to ${formatAmount(found + delta, decimals)}, past its max supply ${formatAmount(max, decimals)} (wallet ${formatAddress(input.wallet)}).`,
            );
          },
        },
      );
    },
  };
}

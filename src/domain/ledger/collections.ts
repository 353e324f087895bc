// Collections (games): the groups NFTs and currencies are minted into. Created by studios and admins,
// owned by their creator: only the owner while a studio (or an admin) mints into one. Every user also has a personal
// collection, `user-<their id>`, created the first time they mint without naming one.

import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Asset } from '../../db/entities/Asset.ts';
import { type BurnPolicy, Collection, type MetadataPolicy } from '../../db/entities/Collection.ts';
import { User } from '../../db/entities/User.ts';
import type { Orm } from '../../db/orm.ts';
import { auditDraft, flushAudited } from '../audit.ts';
import { assertMayMintInto, mayMintCurrency, PERSONAL_COLLECTION_PREFIX } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { formatAmount, labelledAmount } from './amounts.ts';
import { isChainAssetId } from './chain-assets.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import { type CollectionView, collectionView } from './views.ts';

export interface CreateCollectionInput {
  id: string;
  name: string;
  description?: string;
  /** Every NFT of it is non-transferable (default false). */
  soulbound?: boolean;
  /** Who may burn its assets (default `holder`). */
  burnPolicy?: BurnPolicy;
  /** The attribute trait types its assets' metadata updates may change (default none). */
  mutableAttributes?: string[];
  /** Which of name, image, description may change (default none). */
  metadataPolicy?: MetadataPolicy;
}

export interface CollectionService {
  create(actor: Actor, input: CreateCollectionInput): Promise<CollectionView>;
  list(options: { limit: number; cursor?: string }): Promise<Page<CollectionView>>;
}

class CollectionExistsError extends ConflictError {
  constructor(id: string) {
    super(`A collection with id ${id} already exists.`, '/problems/collection-exists');
  }
}

export { PERSONAL_COLLECTION_PREFIX };

/** `user-` and the user id's ULID in lowercase: a valid CollectionId, one per user, derived (no lookup). */
export function personalCollectionId(userId: string): string {
  return PERSONAL_COLLECTION_PREFIX + userId.slice(userId.indexOf('_') + 1).toLowerCase();
}

/**
 * Throws 404 unless the collection exists, 403 unless the actor may mint into it (13.6: a player
 * minted into any studio's collection; 30.2: a demoted studio into its own). Returns it.
 */
export async function requireMintableCollection(
  em: EntityManager,
  actor: Actor,
  id: string,
): Promise<Collection> {
  const collection = await em.findOne(Collection, { id });
  if (!collection) throw new NotFoundError(`No collection with id ${id}.`);
  assertMayMintInto(actor, { id, ownerId: collection.owner.id });
  return collection;
}

/**
 * The actor's personal collection, created on first use. Insert-or-ignore, so two first mints at
 * once both succeed (a failed INSERT would abort the whole transaction on PostgreSQL).
 */
export async function ensurePersonalCollection(em: EntityManager, actor: Actor): Promise<string> {
  const id = personalCollectionId(actor.userId);
  if (await em.count(Collection, { id })) return id;
  const user = await em.findOneOrFail(User, { id: actor.userId });
  await em
    .createQueryBuilder(Collection)
    .insert({
      id,
      name: `${user.username}'s items`,
      description: null,
      owner: actor.userId,
      createdAt: new Date(),
    })
    .onConflict('id')
    .ignore()
    .execute();
  return id;
}

export function createCollectionService(orm: Orm): CollectionService {
  return {
    async create(actor, input) {
      // The contract refuses the prefix too; this keeps the rule when the domain is called directly.
      if (input.id.startsWith(PERSONAL_COLLECTION_PREFIX)) throw new CollectionExistsError(input.id);
      const em = orm.em.fork();
      if (await em.count(Collection, { id: input.id })) throw new CollectionExistsError(input.id);
      const collection = em.create(Collection, {
        id: input.id,
        name: input.name,
        description: input.description ?? null,
        owner: actor.userId,
        createdAt: new Date(),
        soulbound: input.soulbound ?? false,
        burnPolicy: input.burnPolicy ?? 'holder',
        mutableAttributes: input.mutableAttributes?.length ? [...new Set(input.mutableAttributes)] : null,
        metadataPolicy:
          input.metadataPolicy && Object.values(input.metadataPolicy).some(Boolean)
            ? input.metadataPolicy
            : null,
      });
      try {
        await flushAudited(em, () =>
          auditDraft(
            'collection.created',
            { type: 'collection', id: collection.id, ownerId: actor.userId, collectionId: collection.id },
            { after: collectionView(collection) },
          ),
        );
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) throw new CollectionExistsError(input.id);
        throw error;
      }
      return collectionView(collection);
    },

    async list({ limit, cursor }) {
      const rows = await pageById(orm.em.fork(), Collection, [], {
        list: 'collections',
        order: 'oldest',
        limit,
        cursor,
      });
      return mapPage(rows, collectionView);
    },
  };
}

/**
 * An amount of a currency of `collectionId` that `actor` may mint (its creator or an admin), as a
 * recipe's output or a store offer's or claim code's grant gives it: the amount in the currency's
 * canonical form. 404 when the collection has no such currency, 403 when the actor may not mint it.
 */
export async function mintedCurrencyAmount(
  em: EntityManager,
  actor: Actor,
  collectionId: string,
  item: { assetId: string; amount: string },
  label: string,
  pointer: string,
): Promise<string> {
  const currency = isChainAssetId(item.assetId)
    ? null
    : await em.findOne(Asset, { id: item.assetId, kind: 'fungible', collection: collectionId });
  if (!currency)
    throw new NotFoundError(`${label}: no currency ${item.assetId} in the collection ${collectionId}.`);
  if (!mayMintCurrency(actor, currency.creator.id))
    throw new ForbiddenError(`${label}: only the creator of ${item.assetId} or an admin may mint it.`);
  const decimals = currency.decimals ?? 0;
  return formatAmount(labelledAmount(item.amount, decimals, label, `${pointer}/amount`), decimals);
}

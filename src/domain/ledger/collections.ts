// Collections (games): the groups NFTs and currencies are minted into. Created by studios and admins,
// owned by their creator: only the owner while a studio (or an admin) mints into one. Every user also has a personal
// collection, `user-<their id>`, created the first time they mint without naming one.
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { type BurnPolicy, Collection, type MetadataPolicy } from '../../db/entities/Collection.ts';
import { User } from '../../db/entities/User.ts';
import type { Orm } from '../../db/orm.ts';
import { assertMayMintInto, PERSONAL_COLLECTION_PREFIX } from '../authorization.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { decodeCursor, isString, type Page, page } from './cursor.ts';
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
        await em.flush();
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) throw new CollectionExistsError(input.id);
        throw error;
      }
      return collectionView(collection);
    },

    async list({ limit, cursor }) {
      const after = decodeCursor(cursor, 'collections', isString);
      const rows = await orm.em.fork().find(Collection, after === undefined ? {} : { id: { $gt: after } }, {
        orderBy: { id: 'asc' },
        limit: limit + 1,
      });
      const result = page(rows, limit, 'collections', (row) => row.id);
      return { data: result.data.map(collectionView), next_cursor: result.next_cursor };
    },
  };
}

// Collections (games): the groups NFTs and currencies are minted into. Created by studios and admins.
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Collection } from '../../db/entities/Collection.ts';
import type { Orm } from '../../db/orm.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { decodeCursor, isString, type Page, page } from './cursor.ts';
import { type CollectionView, collectionView } from './views.ts';

export interface CreateCollectionInput {
  id: string;
  name: string;
  description?: string;
}

export interface CollectionService {
  create(actor: Actor, input: CreateCollectionInput): Promise<CollectionView>;
  list(options: { limit: number; cursor?: string }): Promise<Page<CollectionView>>;
}

class CollectionExistsError extends ConflictError {
  constructor(id: string) {
    super(
      `A collection with id ${id} already exists.`,
      '/problems/collection-exists',
      'Collection already exists',
    );
  }
}

/** Throws 404 unless the collection exists (minting into a missing collection). */
export async function requireCollection(em: EntityManager, id: string): Promise<void> {
  if (!(await em.count(Collection, { id }))) throw new NotFoundError(`No collection with id ${id}.`);
}

export function createCollectionService(orm: Orm): CollectionService {
  return {
    async create(actor, input) {
      const em = orm.em.fork();
      if (await em.count(Collection, { id: input.id })) throw new CollectionExistsError(input.id);
      const collection = em.create(Collection, {
        id: input.id,
        name: input.name,
        description: input.description ?? null,
        owner: actor.userId,
        createdAt: new Date(),
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

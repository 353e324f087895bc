import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';
import { Collection } from './Collection.ts';
import { User } from './User.ts';

/**
 * A crafting recipe of a collection (issue 21): configuration, like the collection itself, not a
 * ledger write. `inputs` and `outputs` are kept as the contract's RecipeInput / RecipeOutput lists,
 * amounts as decimal strings (a currency's decimals never change).
 */
export const Recipe = defineEntity({
  name: 'Recipe',
  properties: {
    /** `rcp_` + a ULID: recipes list in creation order by id. */
    id: p.string().length(32).primary(),
    collection: () => p.manyToOne(Collection).ref().index(),
    name: p.string(),
    inputs: p.json<components['schemas']['RecipeInput'][]>(),
    outputs: p.json<components['schemas']['RecipeOutput'][]>(),
    creator: () => p.manyToOne(User).ref(),
    createdAt: p.datetime(),
  },
});
export type Recipe = InferEntity<typeof Recipe>;

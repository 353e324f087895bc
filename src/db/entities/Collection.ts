import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

/** A game: the group its studio's assets belong to. */
export const Collection = defineEntity({
  name: 'Collection',
  properties: {
    /** A slug chosen by the studio. */
    id: p.string().primary(),
    name: p.string(),
    description: p.text().nullable(),
    owner: () => p.manyToOne(User).ref().index(),
    createdAt: p.datetime(),
  },
});
export type Collection = InferEntity<typeof Collection>;

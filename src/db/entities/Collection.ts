import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

export const BURN_POLICIES = ['holder', 'holder_or_studio', 'none'] as const;
/** Who may burn the collection's assets: the holder, also the owning studio, or nobody. */
export type BurnPolicy = (typeof BURN_POLICIES)[number];

/** Which top-level fields of its assets may change after minting (absent: no). */
export interface MetadataPolicy {
  name?: boolean;
  image?: boolean;
  description?: boolean;
}

/** A game: the group its studio's assets belong to. */
export const Collection = defineEntity({
  name: 'Collection',
  properties: {
    /** A slug chosen by the studio. */
    id: p.string().primary(),
    name: p.string(),
    description: p.text().nullable(),
    owner: () => p.manyToOne(User).ref().index(),
    /** Every NFT of the collection is non-transferable. */
    soulbound: p.boolean().default(false),
    burnPolicy: p.string().length(16).$type<BurnPolicy>().default('holder'),
    /** The attribute `trait_type`s its assets' metadata updates may change (null: none). */
    mutableAttributes: p.json<string[]>().nullable(),
    /** Which of `name`, `image`, `description` its assets' metadata updates may change (null: none). */
    metadataPolicy: p.json<MetadataPolicy>().nullable(),
    createdAt: p.datetime(),
  },
});
export type Collection = InferEntity<typeof Collection>;

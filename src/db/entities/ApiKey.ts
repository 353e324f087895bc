import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Application } from './Application.ts';
import { User } from './User.ts';

export const ApiKey = defineEntity({
  name: 'ApiKey',
  properties: {
    id: p.string().primary(),
    application: () => p.manyToOne(Application).ref().index(),
    user: () => p.manyToOne(User).ref().index(),
    name: p.string(),
    /** The first characters of the key, shown in listings so a user can tell keys apart. */
    prefix: p.string(),
    /** sha256 hex of the full key: the lookup on every request, so unique and indexed. */
    keyHash: p.string().length(64).unique().hidden(),
    createdAt: p.datetime(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;

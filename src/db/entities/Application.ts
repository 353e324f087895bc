import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

export const APPLICATION_TYPES = ['public', 'confidential'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

/** An OAuth client; API keys belong to one. The seeded first-party client has no owner. */
export const Application = defineEntity({
  name: 'Application',
  properties: {
    clientId: p.string().primary(),
    owner: () => p.manyToOne(User).ref().nullable().index(),
    name: p.string(),
    type: p.enum(APPLICATION_TYPES),
    clientSecretHash: p.string().nullable().hidden(),
    redirectUris: p.json<string[]>(),
    firstParty: p.boolean(),
    createdAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
});
export type Application = InferEntity<typeof Application>;

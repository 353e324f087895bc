import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

/** A user's `did:key` (Ed25519). The private key is held only when the service generated it. */
export const Identity = defineEntity({
  name: 'Identity',
  properties: {
    did: p.string().primary(),
    user: () => p.manyToOne(User).ref().index(),
    publicKeyMultibase: p.string(),
    encryptedPrivateKey: p.text().nullable().hidden(),
    createdAt: p.datetime(),
  },
});
export type Identity = InferEntity<typeof Identity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

/**
 * A `did:key` (Ed25519) and, when the service generated it, its private key (sealed). A row without
 * a user is one of the service's own credential-signing keys (published in its did:web document).
 */
export const Identity = defineEntity({
  name: 'Identity',
  properties: {
    did: p.string().primary(),
    // Deleting a user deletes their DIDs: a DID must never outlive its owner and pass for a service key.
    user: () => p.manyToOne(User).ref().nullable().deleteRule('cascade').index(),
    publicKeyMultibase: p.string(),
    encryptedPrivateKey: p.text().nullable().hidden(),
    createdAt: p.datetime(),
  },
});
export type Identity = InferEntity<typeof Identity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Application } from './Application.ts';

/**
 * A client secret of a service account's OAuth client: several may be active at once, so a secret
 * is rotated without downtime (add the new one, deploy it, revoke the old one). Stored as a SHA-256
 * digest (see src/auth/client-secrets.ts).
 */
export const ClientSecret = defineEntity({
  name: 'ClientSecret',
  properties: {
    id: p.string().primary(),
    application: () => p.manyToOne(Application).ref().index(),
    secretHash: p.string().length(64).unique().hidden(),
    /** The first characters of the secret, so its owner can tell secrets apart. */
    prefix: p.string(),
    createdAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ClientSecret = InferEntity<typeof ClientSecret>;

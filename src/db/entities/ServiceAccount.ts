import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

/** How a service account's client authenticates at the token endpoint. */
export const SERVICE_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;
export type ServiceAuthMethod = (typeof SERVICE_AUTH_METHODS)[number];

/**
 * A machine client (issue 18): one id shared by its user row (role, wallets, API keys), its
 * confidential OAuth client (client credentials grant) and this row, which records who created it,
 * how it authenticates and which scopes it may be granted. A client credentials token's `sub` is
 * the client id (RFC 9068 §2.2), which is therefore also the user id.
 */
export const ServiceAccount = defineEntity({
  name: 'ServiceAccount',
  properties: {
    id: p.string().primary(),
    owner: () => p.manyToOne(User).ref().index(),
    tokenEndpointAuthMethod: p.string(),
    /** The public keys of `private_key_jwt` clients (a JWK Set), else null. */
    jwks: p.json<{ keys: Record<string, unknown>[] }>().nullable(),
    scopes: p.json<string[]>(),
    createdAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
});
export type ServiceAccount = InferEntity<typeof ServiceAccount>;

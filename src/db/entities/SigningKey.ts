import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** Keys that sign access tokens; old keys stay published in the JWKS until retired, for rotation. */
export const SigningKey = defineEntity({
  name: 'SigningKey',
  properties: {
    kid: p.string().primary(),
    alg: p.string(),
    /** The private JWK, encrypted at rest by the caller (the database never sees it in clear). */
    privateJwkEncrypted: p.text().hidden(),
    publicJwk: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
    activatedAt: p.datetime(),
    retiredAt: p.datetime().nullable(),
  },
});
export type SigningKey = InferEntity<typeof SigningKey>;

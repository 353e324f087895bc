import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** oidc-provider's adapter store: one row per stored model instance (sessions, grants, codes, tokens...). */
export const OidcPayload = defineEntity({
  name: 'OidcPayload',
  properties: {
    /** `${model}:${id}`, so one table serves every model. */
    id: p.string().primary(),
    model: p.string(),
    payload: p.json<Record<string, unknown>>(),
    /** Lets `revokeByGrantId` find every token of a grant. */
    grantId: p.string().nullable().index(),
    /** Lets a role change revoke every grant (and so every refresh token) of the user. */
    accountId: p.string().nullable().index(),
    userCode: p.string().nullable().index(),
    /** Lets `findByUid` find an interaction session. */
    uid: p.string().nullable().index(),
    /** Expired rows are invisible to the adapter and purged by it. */
    expiresAt: p.datetime().nullable().index(),
    consumedAt: p.datetime().nullable(),
  },
});
export type OidcPayload = InferEntity<typeof OidcPayload>;

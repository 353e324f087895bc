import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** The first response to a write with an `Idempotency-Key`, replayed to retries with the same body. */
export const IdempotencyRecord = defineEntity({
  name: 'IdempotencyRecord',
  properties: {
    /** `${userId}:${operationId}:${key}`: keys are scoped to their user and operation. */
    id: p.string().length(512).primary(),
    /** Hash of the request body, to tell a retry from a reuse of the key with another body (422). */
    requestHash: p.string(),
    status: p.integer(),
    /** The answer's JSON, when under DEFLATE_FROM_BYTES (src/db/stored-answer.ts); else null. */
    responseBody: p.json<unknown>().nullable(),
    /** The answer's JSON deflated (raw DEFLATE), from DEFLATE_FROM_BYTES up (issue 34: bytes); else null. */
    responseDeflated: p.blob().nullable(),
    responseHeaders: p.json<Record<string, string>>().nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime().index(),
  },
});
export type IdempotencyRecord = InferEntity<typeof IdempotencyRecord>;

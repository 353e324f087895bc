import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** A Bitstring Status List: one bit per issued credential, set when it is revoked. */
export const StatusList = defineEntity({
  name: 'StatusList',
  properties: {
    id: p.string().primary(),
    /** `revocation` (the only purpose used so far) or `suspension`. */
    purpose: p.string(),
    /** Base64 of the 131072-bit (16 KiB) bitstring, uncompressed. */
    bits: p.text(),
    /** The next free index; issuing takes it under a row lock and increments it. */
    nextIndex: p.integer(),
    updatedAt: p.datetime(),
  },
});
export type StatusList = InferEntity<typeof StatusList>;

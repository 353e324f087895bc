import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * One indexer per deployment: the instance named in `holder` indexes the chain until `expiresAt`,
 * renewing it on every step; another instance takes over once it has expired. Every indexer write
 * checks the lease in its own transaction, so a holder that lost it writes nothing.
 */
export const ChainLease = defineEntity({
  name: 'ChainLease',
  properties: {
    chainId: p.integer().primary().autoincrement(false),
    holder: p.string().length(64),
    expiresAt: p.datetime(),
  },
});
export type ChainLease = InferEntity<typeof ChainLease>;

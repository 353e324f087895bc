import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * A user refuses every trade proposal from another (issue 30.10): `refuserUserId` and `refusedUserId`
 * are accounts (a user, never a service account: a service account's refusals, and the refusal of
 * one, are its owner's). `trf_` + a ULID, so a user's refusals list in creation order by id.
 */
export const TradeRefusal = defineEntity({
  name: 'TradeRefusal',
  properties: {
    id: p.string().length(32).primary(),
    refuserUserId: p.string(),
    refusedUserId: p.string(),
    createdAt: p.datetime(),
  },
  uniques: [{ properties: ['refuserUserId', 'refusedUserId'] }],
});
export type TradeRefusal = InferEntity<typeof TradeRefusal>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

/** A Sign-In with Ethereum (EIP-4361) message issued to link a wallet; single use. */
export const SiweChallenge = defineEntity({
  name: 'SiweChallenge',
  properties: {
    nonce: p.string().primary(),
    user: () => p.manyToOne(User).ref().index(),
    address: p.string().length(42),
    message: p.text(),
    expiresAt: p.datetime(),
    usedAt: p.datetime().nullable(),
  },
});
export type SiweChallenge = InferEntity<typeof SiweChallenge>;

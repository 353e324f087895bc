import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { User } from './User.ts';

export const WALLET_KINDS = ['custodial', 'linked'] as const;

/** A wallet a user controls: the custodial one the service holds the key of, or one linked by SIWE. */
export const Wallet = defineEntity({
  name: 'Wallet',
  properties: {
    /** Lowercase `0x` + 40 hex; EIP-55 casing is applied on output only. */
    address: p.string().length(42).primary(),
    user: () => p.manyToOne(User).ref().nullable().index(),
    kind: p.enum(WALLET_KINDS),
    encryptedPrivateKey: p.text().nullable().hidden(),
    createdAt: p.datetime(),
  },
});
export type Wallet = InferEntity<typeof Wallet>;

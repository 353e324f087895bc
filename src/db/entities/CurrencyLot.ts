import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Uint256Type } from '../types/uint256.ts';

/**
 * Issue 36, timed currency grants: a lot (`lot_`) of a currency in a wallet that ends at `expiresAt`
 * (docs/architecture/stores-and-rewards.md). `amount` is what is left of it in the wallet; the ledger
 * store spends live lots first, soonest end first, moves them with the units a transfer takes, keeps
 * `sum(lots) + reserved <= balance` per holding and deletes a lot that reaches 0; the expiry sweep
 * burns what is left at its end.
 */
export const CurrencyLot = defineEntity({
  name: 'CurrencyLot',
  indexes: [
    // The debit order (a holding's lots, soonest end first) and a wallet's listing (its lots by asset).
    { properties: ['wallet', 'assetId', 'expiresAt'] },
    // The sweep: lots due, oldest end first.
    { properties: ['expiresAt'] },
  ],
  properties: {
    id: p.string().length(32).primary(),
    assetId: p.string().length(32),
    wallet: p.string().length(42),
    amount: p.type(Uint256Type),
    expiresAt: p.datetime(),
    /** The transfer that granted the units (a mint's or a store grant's), kept when they move. */
    sourceId: p.string().length(32),
    createdAt: p.datetime(),
  },
});
export type CurrencyLot = InferEntity<typeof CurrencyLot>;

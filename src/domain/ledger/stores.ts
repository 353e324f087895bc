// Stores (issue 36): a collection's studio publishes offers (a price in currencies, paid to a wallet
// of the studio, and in items by template, burned from the buyer's wallet: ./store-items.ts; for
// grants minted to the buyer: currency amounts and NFT templates, a bundle when there are several),
// with optional limits (units per wallet, units in all) and a window. An offer is configuration (a
// row, like a recipe); every change makes a new version, and a purchase names the version it
// accepted.
//
// A purchase is ONE ledger plan through the one ledger store:
//   guards: the offer still available at the version (`offerAvailable`: active, inside its window,
//           the units sold and the wallet's units within their limits after this purchase; it locks
//           the offer row, so of two buyers racing for the last unit exactly one wins), the buyer
//           controls its wallet and holds the price, each paid item still its and burnable (the
//           leg writer's guards), each granted currency's supply within its max;
//   rows:   the payments from the buyer to `payTo` and the burns of the paid items (legs), the
//           grants minted to the buyer (as mints are: ./assets.ts), the units counted
//           (`offerSales`), the purchase row, the events (`newTransfer`s, `newNFT`s,
//           `storePurchase`), all under one `op_` id and one idempotency record.
// The grants are minted with the powers the offer's creator has at the purchase (a demoted studio
// sells nothing more: src/domain/authorization.ts, `assertCreatorMayGrant`).
//
// This file is the service as one: the purchase's idempotency key, and the parts it joins, each one
// job: ./store-context.ts what they share, ./store-offers.ts the offers as configuration,
// ./store-purchase.ts the purchase (and a redemption's) plan with ./store-purchase-parts.ts its rows, ./store-claim-codes.ts claim codes.

import type { Database } from '../../db/database.ts';
import type { Actor } from './actor.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { type ClaimCodeMethods, createClaimCodeMethods } from './store-claim-codes.ts';
import { createStoreContext } from './store-context.ts';
import { createStoreOfferMethods, type StoreOfferMethods } from './store-offers.ts';
import { createSettlement, type StorePurchaseResultView } from './store-purchase.ts';
import type { PurchaseInput } from './store-purchase-parts.ts';

export interface StoreService extends StoreOfferMethods, ClaimCodeMethods {
  /** Pays the version's price and mints its grants, `quantity` times, as one plan; one `op_` id. */
  purchase(
    actor: Actor,
    id: string,
    input: PurchaseInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<StorePurchaseResultView>>;
}

export function createStoreService(
  database: Database,
  idempotency: Idempotency,
  writer: LegWriter,
): StoreService {
  const context = createStoreContext(database, idempotency, writer);
  const settle = createSettlement(context);
  return {
    ...createStoreOfferMethods(context),
    ...createClaimCodeMethods(context, settle),

    async purchase(actor, id, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'purchaseStoreOffer',
        key: idempotencyKey,
        request: {
          id,
          wallet: input.wallet,
          version: input.version,
          quantity: input.quantity ?? 1,
          // Only when named: a purchase without items hashes as it did before item prices existed.
          ...(input.items?.length && { items: input.items }),
        },
      });
      return settle(actor, id, input, key, false);
    },
  };
}

// The marketplace (issue 35): fixed-price listings bought in ONE ledger plan through the one ledger
// store, the studios' settings (trading on or off, royalty, accepted currencies), the sales history
// and the market figures (floor, last sale, 24 h volume).
//
// A listing reserves nothing: the item stays in the seller's wallet. A purchase is the plan
//   guards: the listing still active (`listingActive`, which locks its row: of two buyers exactly
//           one wins), the seller still controls its wallet, holds the item and the item may move,
//           the buyer controls its wallet and holds the price;
//   rows:   the item to the buyer, the price split (seller, studio royalty, deployment fee) from the
//           buyer, the listing sold, the sale row, a market price observation for an NFT, the events
//           (`newTransfer`s, `sale`, `priceUpdate`), all under one `op_` id.
// Royalty and fee are rounded DOWN to base units of the currency and the seller receives the rest, so
// seller + royalty + fee == price exactly. A move, burn or freeze of a listed NFT ends its listings in
// its own plan (./listings.ts); what still slips through is refused at the purchase, which then ends
// the listing (`endReason` unavailable) with its event.
//
// This file is the service as one: the studios' settings, and the parts it joins, each one job:
// ./market-context.ts what they share, ./market-listings.ts listings, ./market-purchase.ts the
// purchase, ./market-figures.ts the sales history and figures, ./offers.ts, ./auctions.ts.

import type { MarketConfig } from '../../config/index.ts';
import type { Database } from '../../db/database.ts';
import { CollectionMarket } from '../../db/entities/CollectionMarket.ts';
import { Listing } from '../../db/entities/Listing.ts';
import { inTransaction } from '../../db/transactions.ts';
import { auditDraft, recordAudit } from '../audit.ts';
import { assertCollectionPowers } from '../authorization.ts';
import { ValidationError } from '../errors.ts';
import type { Actor } from './actor.ts';
import type { StoredAddress } from './addresses.ts';
import { type AuctionMethods, createAuctionMethods } from './auctions.ts';
import type { Idempotency } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { listingRowOfEntity } from './listings.ts';
import { createMarketContext } from './market-context.ts';
import { createMarketFigureMethods, type MarketFigureMethods } from './market-figures.ts';
import { createListingMethods, type ListingMethods } from './market-listings.ts';
import { createPurchaseMethods, type PurchaseMethods } from './market-purchase.ts';
import { createOfferMethods, type OfferMethods } from './offers.ts';
import type { LedgerStore } from './store/plan.ts';
import type { MarketSettingsView } from './views.ts';

export const DEFAULT_MARKET_CONFIG: MarketConfig = {
  feeBps: 0,
  feeWallet: null,
  maxRoyaltyBps: 1000,
  sweepMs: 5000,
};

export interface MarketSettingsInput {
  tradingEnabled?: boolean;
  royaltyBps?: number;
  currencies?: string[] | null;
  royaltyWallet?: StoredAddress | null;
}

export interface MarketService
  extends ListingMethods,
    PurchaseMethods,
    MarketFigureMethods,
    OfferMethods,
    AuctionMethods {
  settings(collectionId: string): Promise<MarketSettingsView>;
  setSettings(actor: Actor, collectionId: string, input: MarketSettingsInput): Promise<MarketSettingsView>;
}

export function createMarketService(
  database: Database,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter,
  config: MarketConfig = DEFAULT_MARKET_CONFIG,
): MarketService {
  const context = createMarketContext(database, idempotency, store, writer, config);
  const { orm } = database;
  const { collectionOf, settingsOf, endListing } = context;

  return {
    ...createOfferMethods(context),
    ...createAuctionMethods(context),
    ...createListingMethods(context),
    ...createPurchaseMethods(context),
    ...createMarketFigureMethods(context),

    async settings(collectionId) {
      await collectionOf(collectionId);
      return settingsOf(collectionId);
    },

    async setSettings(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'set its marketplace settings');
      if (input.royaltyBps !== undefined && input.royaltyBps > config.maxRoyaltyBps)
        throw new ValidationError(
          `A royalty is at most ${config.maxRoyaltyBps} basis points on this deployment.`,
          [{ pointer: '/body/royaltyBps', detail: `must be at most ${config.maxRoyaltyBps}` }],
        );
      for (const [i, currency] of (input.currencies ?? []).entries()) {
        const facts = await writer.factsOf(currency).catch(() => undefined);
        if (facts?.kind !== 'fungible')
          throw new ValidationError(`${currency} is not a currency of this ledger.`, [
            { pointer: `/body/currencies/${i}`, detail: 'is not a currency' },
          ]);
      }
      const before = await settingsOf(collectionId);
      const em = orm.em.fork();
      const next = {
        collectionId,
        tradingEnabled: input.tradingEnabled ?? before.tradingEnabled,
        royaltyBps: input.royaltyBps ?? before.royaltyBps,
        currencies: input.currencies === undefined ? before.currencies : input.currencies,
        royaltyWallet:
          input.royaltyWallet === undefined
            ? (before.royaltyWallet?.toLowerCase() ?? null)
            : input.royaltyWallet,
        updatedAt: new Date(),
      };
      await inTransaction(orm, async (tx) => {
        await tx.upsert(CollectionMarket, next);
        await recordAudit(
          tx,
          auditDraft(
            'collection.marketChanged',
            { type: 'collection', id: collectionId, ownerId: collection.ownerId, collectionId },
            { before, after: next },
          ),
        );
      });
      if (before.tradingEnabled && !next.tradingEnabled) {
        // Every active listing of the collection ends, each in its own plan (one sold meanwhile is left).
        const active = await em.find(Listing, { collectionId, status: 'active' }, { orderBy: { id: 'asc' } });
        for (const listing of active)
          await endListing(listingRowOfEntity(listing), 'tradingOff', actor.userId);
      }
      return settingsOf(collectionId);
    },
  };
}

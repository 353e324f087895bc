// A marketplace purchase (issue 35): a fixed-price listing bought in ONE ledger plan through the leg
// writer (the plan is described in ./market.ts). A purchase the seller's side refuses (the seller no
// longer controls its wallet, holds the item, or may move it) ends the listing (`endReason`
// unavailable) with its event.

import { ConflictError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import type { StoredAddress } from './addresses.ts';
import type { WriteResult } from './idempotency.ts';
import type { AssetFacts, Leg } from './legs.ts';
import { type ListingRow, listingStatusOf, listingView } from './listings.ts';
import {
  ListingNotActiveError,
  type MarketContext,
  notActive,
  TradingDisabledError,
} from './market-context.ts';
import type { GuardFailure, NewEvent, NewSale } from './store/plan.ts';
import type { MarketSettingsView, PurchaseView } from './views.ts';
import { earlierAnswerOr } from './writes.ts';

export interface PurchaseMethods {
  buy(
    actor: Actor,
    id: string,
    wallet: StoredAddress,
    idempotencyKey?: string,
  ): Promise<WriteResult<PurchaseView>>;
}

/** What a purchase of a listing checked: the listing, its item, its currency, its collection's settings. */
interface Purchase {
  listing: ListingRow;
  item: AssetFacts;
  currency: AssetFacts;
  settings: MarketSettingsView;
}

export function createPurchaseMethods(ctx: MarketContext): PurchaseMethods {
  const { idempotency, writer, readListing, settingsOf } = ctx;

  /** The listing bought by `wallet`, checked: active, not the buyer's own, trading on. */
  async function checkedPurchase(actor: Actor, id: string, wallet: StoredAddress): Promise<Purchase> {
    const listing = await readListing(id);
    const status = listingStatusOf(listing, new Date());
    if (status !== 'active') throw new ListingNotActiveError(id, status);
    await writer.assertControls(actor, [{ from: wallet, place: { pointer: '/body/wallet', label: '' } }]);
    if (wallet === listing.sellerWallet || actor.userId === listing.sellerUserId)
      throw new ConflictError(`The listing ${id} is your own: you cannot buy it.`, '/problems/own-listing');
    const settings = await settingsOf(listing.collectionId);
    if (!settings.tradingEnabled) throw new TradingDisabledError(listing.collectionId);
    const item = await writer.factsOf(listing.assetId);
    const currency = await writer.factsOf(listing.currencyId);
    return { listing, item, currency, settings };
  }

  /**
   * The purchase's parts: the item to the buyer and the price split from it (legs), the sale row, the
   * listing sold, the events (`sale`, and for an NFT its market price and `priceUpdate`).
   */
  async function purchaseParts(actor: Actor, id: string, wallet: StoredAddress, purchase: Purchase) {
    const { listing, item, currency, settings } = purchase;
    const { royaltyWallet, feeWallet, split } = await ctx.shares(settings, listing.price);
    const place = { pointer: '/path/listing_id', label: '' };
    const legs: Leg[] = [
      {
        asset: item,
        amount: listing.amount,
        from: listing.sellerWallet,
        to: wallet,
        place,
        by: listing.sellerUserId,
      },
    ];
    const pay = (to: StoredAddress | null | undefined, amount: bigint) => {
      // A share to the buyer itself (a studio buying in its own collection) does not move.
      if (to && amount > 0n && to !== wallet)
        legs.push({
          asset: currency,
          amount,
          from: wallet,
          to,
          place: { pointer: '/body/wallet', label: '' },
        });
    };
    pay(listing.sellerWallet, split.sellerProceeds);
    pay(royaltyWallet, split.royalty);
    pay(feeWallet, split.fee);
    const at = new Date();
    const operationId = newId('op');
    const sale: NewSale = {
      id: operationId,
      listingId: id,
      assetId: item.id,
      collectionId: listing.collectionId,
      amount: listing.amount,
      currencyId: currency.id,
      price: listing.price,
      ...split,
      sellerWallet: listing.sellerWallet,
      buyerWallet: wallet,
      createdAt: at,
    };
    const sold: ListingRow = {
      ...listing,
      status: 'sold',
      closedBy: actor.userId,
      operationId,
      updatedAt: at,
    };
    const decimals = { asset: item.decimals, currency: currency.decimals };
    const soldView = listingView(sold, decimals, at);
    const saleBody = await ctx.saleView(sale);
    const events: NewEvent[] = [
      {
        type: 'sale',
        occurredAt: at,
        data: saleBody,
        assetId: item.id,
        collectionId: listing.collectionId,
        wallets: [listing.sellerWallet, wallet],
        fromWallet: listing.sellerWallet,
        toWallet: wallet,
      },
    ];
    const prices = [];
    if (item.kind === 'nft') {
      // An NFT's market price is its last sale (GET /api/v1/price/{id}, source `market`).
      const price = ctx.marketPrice(sale, saleBody, currency.decimals, actor.userId);
      prices.push(price.row);
      events.push(price.event);
    }
    return { legs, at, operationId, sale, soldView, saleBody, events, prices };
  }

  return {
    async buy(actor, id, wallet, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'buyListing',
        key: idempotencyKey,
        request: { id, wallet },
      });
      let purchase: Purchase;
      try {
        purchase = await checkedPurchase(actor, id, wallet);
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const { listing, item } = purchase;
      const { legs, at, operationId, sale, soldView, saleBody, events, prices } = await purchaseParts(
        actor,
        id,
        wallet,
        purchase,
      );
      // The seller side failing (no longer controls, holds, or may move the item) ends the listing.
      let unavailable = false;
      const sellerSide = (failure: GuardFailure) => {
        const { guard } = failure;
        const seller =
          (guard.kind === 'controls' && guard.wallet === listing.sellerWallet) ||
          (guard.kind === 'holds' && guard.assetId === item.id && guard.wallet === listing.sellerWallet) ||
          (guard.kind === 'movable' && guard.assetId === item.id);
        if (!seller) return undefined;
        unavailable = true;
        return new ListingNotActiveError(id, 'unavailable');
      };
      try {
        return await writer.apply(
          actor,
          legs,
          key,
          at,
          (transfers) => ({
            status: 201,
            body: { id: operationId, sale: saleBody, listing: soldView, transfers },
            headers: {},
          }),
          {
            leading: [{ kind: 'listingActive', listingId: id, at }],
            listingStatuses: [
              { listingId: id, status: 'sold', reason: null, by: actor.userId, operationId, at },
            ],
            sales: [sale],
            prices,
            events,
            operationId,
            refuse: (failure) => notActive(id, failure) ?? sellerSide(failure),
          },
        );
      } catch (error) {
        if (unavailable) await ctx.endListing(listing, 'unavailable');
        throw error;
      }
    },
  };
}

// Marketplace listings (issue 35): listing an item at a fixed price, reading and searching listings,
// cancelling one, and the sweep that expires them. A listing reserves nothing: the item stays in the
// seller's wallet; the listing's plan checks now that the seller controls its wallet, holds the item
// and may move it, for an early answer. The purchase is ./market-purchase.ts.

import type { FilterQuery } from '@mikro-orm/core';
import { Asset } from '../../db/entities/Asset.ts';
import { Listing } from '../../db/entities/Listing.ts';
import { controlsWallet } from '../authorization.ts';
import { ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import type { StoredAddress } from './addresses.ts';
import { parseAmount } from './amounts.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { WriteResult } from './idempotency.ts';
import { type AssetFacts, type Leg, legGuards, legRefusal } from './legs.ts';
import {
  closedListing,
  type ListingRow,
  listingEvent,
  listingRowOfEntity,
  listingStatusOf,
  listingView,
} from './listings.ts';
import { checkPriceOrder, listingsByPrice } from './listings-by-price.ts';
import {
  buyable,
  ListingNotActiveError,
  type MarketContext,
  notActive,
  TradingDisabledError,
} from './market-context.ts';
import type { ListingView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

export interface CreateListingInput {
  wallet: StoredAddress;
  assetId: string;
  amount?: string;
  currency: string;
  price: string;
  expiresIn?: number;
}

export interface ListingFilters {
  collection?: string;
  seller?: StoredAddress;
  assetId?: string;
  status?: ListingView['status'];
  currency?: string;
  /** `newest` (the default) or `price`: the buyable listings of one currency, cheapest first. */
  sort?: 'newest' | 'price';
  limit: number;
  cursor?: string;
}

export interface ListingMethods {
  createListing(
    actor: Actor,
    input: CreateListingInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<ListingView>>;
  getListing(id: string): Promise<ListingView>;
  listListings(filters: ListingFilters): Promise<Page<ListingView>>;
  cancelListing(actor: Actor, id: string): Promise<ListingView>;
  /** Ends the active listings past their expiry (at most `limit`), each in its own plan; how many. */
  expireListings(now: Date, limit: number): Promise<number>;
}

/** How many times a listing reads its item again when the item's metadata changed meanwhile. */
const LISTING_ATTEMPTS = 5;

/** A listing refused by its `assetVersion` guard: its item's metadata changed since it was read. */
class ItemMetadataChangedError extends Error {
  constructor(assetId: string) {
    super(`The metadata of ${assetId} kept changing while it was listed.`);
  }
}

export function createListingMethods(ctx: MarketContext): ListingMethods {
  const { orm, idempotency, store, writer, settingsOf, readListing, decimalsOf } = ctx;

  /**
   * What a listing offers, checked: the seller's wallet controlled, trading on, the price in a
   * currency the collection accepts, the amount (1 for an NFT) as the leg that moves at a purchase.
   */
  async function listingTerms(
    actor: Actor,
    input: CreateListingInput,
  ): Promise<{ leg: Leg; currency: AssetFacts; price: bigint }> {
    await writer.assertControls(actor, [
      { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
    ]);
    const asset = await writer.factsOf(input.assetId);
    const settings = await settingsOf(asset.collectionId);
    if (!settings.tradingEnabled) throw new TradingDisabledError(asset.collectionId);
    const currency = await ctx.acceptedCurrency(settings, input.currency);
    const amount = parseAmount(input.amount ?? '1', asset.kind === 'nft' ? 0 : asset.decimals, {
      pointer: '/body/amount',
      positive: true,
    });
    if (asset.kind === 'nft' && amount !== 1n)
      throw new ValidationError(
        'The amount of a listed NFT must be 1.',
        [{ pointer: '/body/amount', detail: 'must be 1 for an NFT' }],
        '/problems/invalid-amount',
      );
    const price = parseAmount(input.price, currency.decimals, {
      pointer: '/body/price',
      positive: true,
      label: 'price',
    });
    const leg = {
      asset,
      amount,
      from: input.wallet,
      to: input.wallet,
      place: { pointer: '/body', label: '' },
    };
    return { leg, currency, price };
  }

  return {
    async createListing(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createListing',
        key: idempotencyKey,
        request: input,
      });
      let leg: Leg;
      let currency: AssetFacts;
      let price: bigint;
      try {
        ({ leg, currency, price } = await listingTerms(actor, input));
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = new Date();
      const listing: ListingRow = {
        id: newId('lst'),
        status: 'active',
        endReason: null,
        sellerUserId: actor.userId,
        sellerWallet: input.wallet,
        assetId: leg.asset.id,
        collectionId: leg.asset.collectionId,
        amount: leg.amount,
        currencyId: currency.id,
        price,
        expiresAt: input.expiresIn === undefined ? null : new Date(at.getTime() + input.expiresIn * 1000),
        createdAt: at,
        updatedAt: at,
        operationId: null,
        closedBy: null,
      };
      const view = listingView(listing, { asset: leg.asset.decimals, currency: currency.decimals }, at);
      // The store writes the listing's trait rows from its item's metadata (the trait floor), read
      // here and guarded (`assetVersion`): a metadata change committed in between rewrote the trait
      // rows of the item's listings without this one, so the item is read again.
      for (let attempt = 1; ; attempt++) {
        const item = await orm.em
          .fork()
          .findOneOrFail(Asset, { id: leg.asset.id }, { fields: ['metadata', 'metadataVersion'] });
        try {
          // Checked now (controlled, held, free to move) for an early answer; nothing is reserved.
          return await applyWrite(
            store,
            idempotency,
            key,
            {
              at,
              guards: [
                ...legGuards(actor, [leg]),
                { kind: 'assetVersion', assetId: leg.asset.id, version: item.metadataVersion },
              ],
              listings: [{ ...listing, metadata: item.metadata }],
              events: [listingEvent('listingCreated', view, at)],
            },
            { status: 201, body: view, headers: { Location: `/api/v1/listings/${listing.id}` } },
            (failure) =>
              legRefusal([leg], failure) ??
              (failure.guard.kind === 'assetVersion'
                ? new ItemMetadataChangedError(leg.asset.id)
                : new Error(`Unexpected guard ${failure.guard.kind}.`)),
          );
        } catch (error) {
          if (!(error instanceof ItemMetadataChangedError) || attempt >= LISTING_ATTEMPTS) throw error;
        }
      }
    },

    async getListing(id) {
      const listing = await readListing(id);
      return listingView(listing, await decimalsOf(listing));
    },

    async listListings({ collection, seller, assetId, status, currency, sort, limit, cursor }) {
      const now = new Date();
      let rows: Page<Listing>;
      if (sort === 'price') {
        const filters = checkPriceOrder({ currency, collection, assetId, seller, status });
        rows = await listingsByPrice(orm.em.fork(), filters, { limit, cursor }, now);
      } else {
        const where: FilterQuery<Listing>[] = [];
        if (collection) where.push({ collectionId: collection });
        if (seller) where.push({ sellerWallet: seller });
        if (assetId) where.push({ assetId });
        if (currency) where.push({ currencyId: currency });
        if (status === 'active') where.push(buyable());
        else if (status === 'expired') where.push({ status: 'active', expiresAt: { $lte: now } });
        else if (status) where.push({ status });
        rows = await pageById(orm.em.fork(), Listing, where, {
          list: 'listings',
          order: 'newest',
          limit,
          cursor,
        });
      }
      return mapPage(rows, async (row) => {
        const listing = listingRowOfEntity(row);
        return listingView(listing, await decimalsOf(listing), now);
      });
    },

    async cancelListing(actor, id) {
      const listing = await readListing(id);
      await writer.assertControls(actor, [
        { from: listing.sellerWallet, place: { pointer: '/path', label: '' } },
      ]);
      const at = new Date();
      const status = listingStatusOf(listing, at);
      if (status !== 'active') throw new ListingNotActiveError(id, status);
      const closed = closedListing(listing, await decimalsOf(listing), {
        status: 'cancelled',
        reason: null,
        by: actor.userId,
        at,
      });
      const result = await applyWrite(
        store,
        idempotency,
        undefined,
        {
          at,
          guards: [
            { kind: 'listingActive', listingId: id, at },
            controlsWallet(actor.userId, listing.sellerWallet),
          ],
          listingStatuses: [closed.change],
          events: [closed.event],
        },
        { status: 200, body: closed.view, headers: {} },
        (failure) =>
          notActive(id, failure) ??
          (failure.guard.kind === 'controls'
            ? new WalletNotControlledError(listing.sellerWallet)
            : new Error(`Unexpected guard ${failure.guard.kind}.`)),
      );
      return result.body;
    },

    async expireListings(now, limit) {
      const rows = await orm.em
        .fork()
        .find(
          Listing,
          { status: 'active', expiresAt: { $lte: now } },
          { orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }], limit },
        );
      let expired = 0;
      for (const row of rows) {
        const listing = listingRowOfEntity(row);
        const at = new Date();
        const closed = closedListing(listing, await decimalsOf(listing), {
          status: 'expired',
          reason: null,
          by: null,
          at,
        });
        // No `at`: the guard checks the listing is still active, not its expiry. Bought, cancelled or
        // swept by another instance meanwhile: refused, nothing written (each listing expires once).
        const outcome = await store.apply({
          at,
          guards: [{ kind: 'listingActive', listingId: listing.id }],
          listingStatuses: [closed.change],
          events: [closed.event],
        });
        if (outcome.outcome === 'applied') expired++;
      }
      return expired;
    },
  };
}

// Marketplace operations (issue 35): listings (create, read, list, cancel, buy), the sales history,
// market figures per collection and per item, a collection's market settings, and offers (made,
// listed, accepted, cancelled).
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function marketHandlers(ledger: Ledger): HandlerMap {
  const { market } = ledger;
  return typedHandlers<
    | 'createListing'
    | 'listListings'
    | 'getListing'
    | 'cancelListing'
    | 'buyListing'
    | 'listSales'
    | 'getCollectionMarket'
    | 'getAssetMarket'
    | 'getMarketSettings'
    | 'setMarketSettings'
    | 'createOffer'
    | 'listOffers'
    | 'getOffer'
    | 'cancelOffer'
    | 'acceptOffer'
    | 'createAuction'
    | 'listAuctions'
    | 'getAuction'
    | 'bidAuction'
    | 'cancelAuction'
  >({
    async createListing(request, ctx) {
      const { body } = request;
      const created = await market.createListing(
        actorOf(request),
        { ...body, wallet: parseAddress(body.wallet, '/body/wallet') },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'createListing', created);
    },

    async listListings(request, ctx) {
      const { query } = request;
      const page = await market.listListings({
        collection: query.collection,
        seller: query.seller === undefined ? undefined : parseAddress(query.seller, '/query/seller'),
        assetId: query.assetId,
        status: query.status,
        currency: query.currency,
        sort: query.sort,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listListings', 200, page);
    },

    async getListing(request, ctx) {
      respond(ctx, 'getListing', 200, await market.getListing(request.params.listing_id));
    },

    async cancelListing(request, ctx) {
      const cancelled = await market.cancelListing(actorOf(request), request.params.listing_id);
      respond(ctx, 'cancelListing', 200, cancelled);
    },

    async buyListing(request, ctx) {
      const bought = await market.buy(
        actorOf(request),
        request.params.listing_id,
        parseAddress(request.body.wallet, '/body/wallet'),
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'buyListing', bought);
    },

    async listSales(request, ctx) {
      const { query } = request;
      const page = await market.listSales({
        collection: query.collection,
        assetId: query.assetId,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listSales', 200, page);
    },

    async getCollectionMarket(request, ctx) {
      const { query } = request;
      const trait =
        query.traitType !== undefined && query.traitValue !== undefined
          ? { type: query.traitType, value: query.traitValue }
          : undefined;
      const stats = await market.collectionStats(request.params.collection_id, query.currency, trait);
      respond(ctx, 'getCollectionMarket', 200, stats);
    },

    async getAssetMarket(request, ctx) {
      const stats = await market.assetStats(request.params.asset_id, request.query.currency);
      respond(ctx, 'getAssetMarket', 200, stats);
    },

    async createOffer(request, ctx) {
      const { body } = request;
      const created = await market.createOffer(
        actorOf(request),
        { ...body, wallet: parseAddress(body.wallet, '/body/wallet') },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'createOffer', created);
    },

    async listOffers(request, ctx) {
      const { query } = request;
      const page = await market.listOffers({
        collection: query.collection,
        bidder: query.bidder === undefined ? undefined : parseAddress(query.bidder, '/query/bidder'),
        assetId: query.assetId,
        status: query.status,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listOffers', 200, page);
    },

    async getOffer(request, ctx) {
      respond(ctx, 'getOffer', 200, await market.getOffer(request.params.offer_id));
    },

    async cancelOffer(request, ctx) {
      respond(ctx, 'cancelOffer', 200, await market.cancelOffer(actorOf(request), request.params.offer_id));
    },

    async acceptOffer(request, ctx) {
      const { body } = request;
      const accepted = await market.acceptOffer(
        actorOf(request),
        request.params.offer_id,
        { wallet: parseAddress(body.wallet, '/body/wallet'), assetId: body.assetId },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'acceptOffer', accepted);
    },

    async createAuction(request, ctx) {
      const { body } = request;
      const created = await market.createAuction(
        actorOf(request),
        { ...body, wallet: parseAddress(body.wallet, '/body/wallet') },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'createAuction', created);
    },

    async listAuctions(request, ctx) {
      const { query } = request;
      const page = await market.listAuctions({
        collection: query.collection,
        seller: query.seller === undefined ? undefined : parseAddress(query.seller, '/query/seller'),
        assetId: query.assetId,
        status: query.status,
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listAuctions', 200, page);
    },

    async getAuction(request, ctx) {
      respond(ctx, 'getAuction', 200, await market.getAuction(request.params.auction_id));
    },

    async bidAuction(request, ctx) {
      const { body } = request;
      const bid = await market.bid(
        actorOf(request),
        request.params.auction_id,
        { wallet: parseAddress(body.wallet, '/body/wallet'), amount: body.amount },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'bidAuction', bid);
    },

    async cancelAuction(request, ctx) {
      respond(
        ctx,
        'cancelAuction',
        200,
        await market.cancelAuction(actorOf(request), request.params.auction_id),
      );
    },

    async getMarketSettings(request, ctx) {
      respond(ctx, 'getMarketSettings', 200, await market.settings(request.params.collection_id));
    },

    async setMarketSettings(request, ctx) {
      const { body } = request;
      const settings = await market.setSettings(actorOf(request), request.params.collection_id, {
        ...body,
        royaltyWallet:
          typeof body.royaltyWallet === 'string'
            ? parseAddress(body.royaltyWallet, '/body/royaltyWallet')
            : body.royaltyWallet,
      });
      respond(ctx, 'setMarketSettings', 200, settings);
    },
  });
}

// Asset operations: reading assets and holdings, collections, minting NFTs and currencies.

import type { Context } from 'koa';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import {
  assetChangeKeys,
  assetOwnersChangeKeys,
  type HoldingFilters,
  type ListingRequest,
} from '../../domain/ledger/reads/index.ts';
import { type HandlerMap, type ResponseBody, respond, type TypedRequest, typedHandlers } from '../handler.ts';
import { bypassesCache, type ReadCache } from '../read-cache.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

type HoldingsOperation = 'listWalletAssets' | 'listMyAssets';

function holdingFilters(request: TypedRequest<HoldingsOperation>): HoldingFilters {
  return {
    kind: request.query.kind,
    collection: request.query.collection,
    limit: limitOf(request),
    cursor: cursorOf(request),
  };
}

export function assetHandlers(ledger: Ledger, cache: ReadCache): HandlerMap {
  /**
   * Answers with the JSON of `compute()`, cached under the operation and `key` until a change touches
   * one of the change keys `keysOf` names (../read-cache.ts; each read's keys are exported next to its
   * query: ../../domain/ledger/reads/queries.ts). The answer is the 200 body the contract declares for
   * the request's operation.
   */
  async function sendCached<Id extends 'getAsset' | 'listAssetOwners'>(
    ctx: Context,
    request: TypedRequest<Id>,
    key: unknown[],
    compute: () => Promise<ResponseBody<Id, 200>>,
    keysOf: (answer: ResponseBody<Id, 200>) => readonly string[],
  ): Promise<void> {
    const bypass = bypassesCache(request.headers['cache-control']);
    const body = await cache.json(JSON.stringify([request.operationId, ...key]), compute, keysOf, bypass);
    ctx.type = 'application/json';
    ctx.body = body;
  }

  /**
   * A holdings listing (a wallet's or a user's), cached under its filters with the change keys the
   * listing names; its answer is the 200 body the contract declares for the operation (the reads build
   * it from the contract's types).
   */
  async function sendHoldings(
    ctx: Context,
    request: TypedRequest<HoldingsOperation>,
    owner: string,
    listing: (filters: HoldingFilters) => ListingRequest,
  ): Promise<void> {
    const filters = holdingFilters(request);
    const key = [request.operationId, owner, filters.kind, filters.collection, filters.limit, filters.cursor];
    const body = await cache.body(
      JSON.stringify(key),
      () => ledger.reads.listing(listing(filters)),
      bypassesCache(request.headers['cache-control']),
    );
    ctx.type = 'application/json';
    ctx.body = body;
  }

  return typedHandlers<
    | 'getAsset'
    | 'listAssetOwners'
    | HoldingsOperation
    | 'createCollection'
    | 'listCollections'
    | 'createNft'
    | 'createCurrency'
    | 'mintCurrency'
    | 'mintBatch'
  >({
    async getAsset(request, ctx) {
      const id = request.params.asset_id;
      await sendCached(ctx, request, [id], () => ledger.reads.asset(id), assetChangeKeys);
    },

    async listAssetOwners(request, ctx) {
      const id = request.params.asset_id;
      const options = { limit: limitOf(request), cursor: cursorOf(request) };
      await sendCached(
        ctx,
        request,
        [id, options.limit, options.cursor],
        () => ledger.reads.assetOwners(id, options),
        () => assetOwnersChangeKeys(id),
      );
    },

    async listWalletAssets(request, ctx) {
      const wallet = parseAddress(request.params.wallet_id, '/path/wallet_id');
      await sendHoldings(ctx, request, wallet, (filters) => ({ op: 'walletAssets', wallet, filters }));
    },

    async listMyAssets(request, ctx) {
      const { userId } = actorOf(request);
      await sendHoldings(ctx, request, userId, (filters) => ({ op: 'userAssets', userId, filters }));
    },

    async createCollection(request, ctx) {
      respond(ctx, 'createCollection', 201, await ledger.collections.create(actorOf(request), request.body));
    },

    async listCollections(request, ctx) {
      const page = await ledger.collections.list({ limit: limitOf(request), cursor: cursorOf(request) });
      respond(ctx, 'listCollections', 200, page);
    },

    async createNft(request, ctx) {
      const { body } = request;
      const to = body.to === undefined ? undefined : parseAddress(body.to, '/body/to');
      const input = { ...body, to };
      const created = await ledger.assets.createNft(actorOf(request), input, idempotencyKeyOf(request));
      sendStored(ctx, 'createNft', created);
    },

    async createCurrency(request, ctx) {
      const { body } = request;
      const created = await ledger.assets.createCurrency(actorOf(request), body, idempotencyKeyOf(request));
      sendStored(ctx, 'createCurrency', created);
    },

    async mintBatch(request, ctx) {
      const items = request.body.items.map((item, i) => {
        const to = parseAddress(item.to, `/body/items/${i}/to`);
        return 'nft' in item ? { to, nft: item.nft } : { to, currency: item.currency, amount: item.amount };
      });
      const minted = await ledger.assets.mintBatch(
        actorOf(request),
        request.params.collection_id,
        items,
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'mintBatch', minted);
    },

    async mintCurrency(request, ctx) {
      const { body } = request;
      const input = {
        to: parseAddress(body.to, '/body/to'),
        amount: body.amount,
        ...(body.expiresAt !== undefined && { expiresAt: body.expiresAt }),
      };
      const minted = await ledger.assets.mint(
        actorOf(request),
        request.params.asset_id,
        input,
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'mintCurrency', minted);
    },
  });
}

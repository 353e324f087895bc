// Asset operations: reading assets and holdings, collections, minting NFTs and currencies.

import type { Context } from 'koa';
import type { components } from '../../../generated/openapi/types.ts';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { HoldingFilters } from '../../domain/ledger/holding-lists.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import type { AssetMetadataView } from '../../domain/ledger/views.ts';
import type { HandlerMap, OperationRequest } from '../handler.ts';
import { bypassesCache, type ReadCache } from '../read-cache.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

type Schemas = components['schemas'];

function holdingFilters(request: OperationRequest): HoldingFilters {
  return {
    kind: request.query.kind as HoldingFilters['kind'],
    collection: request.query.collection as string | undefined,
    limit: limitOf(request),
    cursor: cursorOf(request),
  };
}

export function assetHandlers(ledger: Ledger, cache: ReadCache): HandlerMap {
  /** Answers with the JSON of `compute()`, cached under the operation and `key` (../read-cache.ts). */
  async function sendCached(
    ctx: Context,
    request: OperationRequest,
    key: unknown[],
    compute: () => Promise<unknown>,
  ): Promise<void> {
    const bypass = bypassesCache(request.headers['cache-control']);
    const body = await cache.json(JSON.stringify([request.operationId, ...key]), compute, bypass);
    ctx.type = 'application/json';
    ctx.body = body;
  }

  /** A holdings listing of `owner` (a wallet or a user), cached under its filters. */
  function sendHoldings(
    ctx: Context,
    request: OperationRequest,
    owner: string,
    list: (filters: HoldingFilters) => Promise<unknown>,
  ): Promise<void> {
    const filters = holdingFilters(request);
    const key = [owner, filters.kind, filters.collection, filters.limit, filters.cursor];
    return sendCached(ctx, request, key, () => list(filters));
  }

  return {
    async getAsset(request, ctx) {
      const id = request.params.asset_id;
      await sendCached(ctx, request, [id], () => ledger.assets.get(id));
    },

    async listAssetOwners(request, ctx) {
      const id = request.params.asset_id;
      const options = { limit: limitOf(request), cursor: cursorOf(request) };
      await sendCached(ctx, request, [id, options.limit, options.cursor], () =>
        ledger.holdings.assetOwners(id, options),
      );
    },

    async listWalletAssets(request, ctx) {
      const wallet = parseAddress(request.params.wallet_id, '/path/wallet_id');
      await sendHoldings(ctx, request, wallet, (filters) => ledger.holdings.walletAssets(wallet, filters));
    },

    async listMyAssets(request, ctx) {
      const { userId } = actorOf(request);
      await sendHoldings(ctx, request, userId, (filters) => ledger.holdings.userAssets(userId, filters));
    },

    async createCollection(request, ctx) {
      const body = request.body as Schemas['CreateCollectionRequest'];
      ctx.status = 201;
      ctx.body = await ledger.collections.create(actorOf(request), body);
    },

    async listCollections(request, ctx) {
      ctx.body = await ledger.collections.list({ limit: limitOf(request), cursor: cursorOf(request) });
    },

    async createNft(request, ctx) {
      const body = request.body as Schemas['CreateNftRequest'];
      const to = body.to === undefined ? undefined : parseAddress(body.to, '/body/to');
      const input = { ...body, metadata: body.metadata as AssetMetadataView, to };
      sendStored(ctx, await ledger.assets.createNft(actorOf(request), input, idempotencyKeyOf(request)));
    },

    async createCurrency(request, ctx) {
      const body = request.body as Schemas['CreateCurrencyRequest'];
      const input = { ...body, metadata: body.metadata as AssetMetadataView };
      sendStored(ctx, await ledger.assets.createCurrency(actorOf(request), input, idempotencyKeyOf(request)));
    },

    async mintCurrency(request, ctx) {
      const body = request.body as Schemas['MintCurrencyRequest'];
      const input = { to: parseAddress(body.to, '/body/to'), amount: body.amount };
      sendStored(
        ctx,
        await ledger.assets.mint(actorOf(request), request.params.asset_id, input, idempotencyKeyOf(request)),
      );
    },
  };
}

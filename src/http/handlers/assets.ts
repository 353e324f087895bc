// Asset operations: reading assets and holdings, collections, minting NFTs and currencies.
import type { components } from '../../../generated/openapi/types.ts';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { HoldingFilters } from '../../domain/ledger/holding-lists.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import type { AssetMetadataView } from '../../domain/ledger/views.ts';
import type { HandlerMap, OperationRequest } from '../handler.ts';
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

export function assetHandlers(ledger: Ledger): HandlerMap {
  return {
    async getAsset(request, ctx) {
      ctx.body = await ledger.assets.get(request.params.asset_id);
    },

    async listAssetOwners(request, ctx) {
      ctx.body = await ledger.holdings.assetOwners(request.params.asset_id, {
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
    },

    async listWalletAssets(request, ctx) {
      const wallet = parseAddress(request.params.wallet_id, '/path/wallet_id');
      ctx.body = await ledger.holdings.walletAssets(wallet, holdingFilters(request));
    },

    async listMyAssets(request, ctx) {
      ctx.body = await ledger.holdings.userAssets(actorOf(request).userId, holdingFilters(request));
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

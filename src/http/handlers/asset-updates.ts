// Asset changes other than moves (issue 21): freeze, unfreeze, living metadata and its history.
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf } from './ledger-request.ts';

export function assetUpdateHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<'freezeAsset' | 'unfreezeAsset' | 'updateAssetMetadata' | 'listAssetMetadataHistory'>({
    async freezeAsset(request, ctx) {
      const asset = await ledger.assetUpdates.setFrozen(actorOf(request), request.params.asset_id, true);
      respond(ctx, 'freezeAsset', 200, asset);
    },

    async unfreezeAsset(request, ctx) {
      const asset = await ledger.assetUpdates.setFrozen(actorOf(request), request.params.asset_id, false);
      respond(ctx, 'unfreezeAsset', 200, asset);
    },

    async updateAssetMetadata(request, ctx) {
      const updated = await ledger.assetUpdates.updateMetadata(
        actorOf(request),
        request.params.asset_id,
        request.body,
        idempotencyKeyOf(request),
      );
      if (updated.replayed) ctx.set('Idempotent-Replayed', 'true');
      respond(ctx, 'updateAssetMetadata', 200, updated.body);
    },

    async listAssetMetadataHistory(request, ctx) {
      const page = await ledger.assetUpdates.history(request.params.asset_id, {
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listAssetMetadataHistory', 200, page);
    },
  });
}

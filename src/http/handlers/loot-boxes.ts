// Loot box operations (issue 36): drop tables, loot boxes and their odds, opening one, the draw
// seeds (commit, read, reveal) and the draws.
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function lootBoxHandlers(ledger: Ledger): HandlerMap {
  const { lootBoxes } = ledger;
  return typedHandlers<
    | 'createDropTable'
    | 'getDropTable'
    | 'createLootBox'
    | 'listLootBoxes'
    | 'getLootBox'
    | 'openLootBox'
    | 'commitDrawSeed'
    | 'getDrawSeed'
    | 'revealDrawSeed'
    | 'getDraw'
  >({
    async createDropTable(request, ctx) {
      const table = await lootBoxes.createTable(actorOf(request), request.params.collection_id, request.body);
      ctx.set('Location', `/api/v1/drop-tables/${table.id}`);
      respond(ctx, 'createDropTable', 201, table);
    },

    async getDropTable(request, ctx) {
      respond(ctx, 'getDropTable', 200, await lootBoxes.getTable(request.params.table_id));
    },

    async createLootBox(request, ctx) {
      const box = await lootBoxes.createBox(actorOf(request), request.params.collection_id, request.body);
      ctx.set('Location', `/api/v1/loot-boxes/${box.id}`);
      respond(ctx, 'createLootBox', 201, box);
    },

    async listLootBoxes(request, ctx) {
      const page = await lootBoxes.listBoxes(request.params.collection_id, {
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listLootBoxes', 200, page);
    },

    async getLootBox(request, ctx) {
      const { wallet } = request.query;
      const box = await lootBoxes.getBox(
        request.params.box_id,
        wallet === undefined ? undefined : parseAddress(wallet, '/query/wallet'),
      );
      respond(ctx, 'getLootBox', 200, box);
    },

    async openLootBox(request, ctx) {
      const { body } = request;
      const opened = await lootBoxes.open(
        actorOf(request),
        request.params.box_id,
        { ...body, wallet: parseAddress(body.wallet, '/body/wallet') },
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'openLootBox', opened);
    },

    async commitDrawSeed(request, ctx) {
      const seed = await lootBoxes.commitSeed(
        actorOf(request),
        parseAddress(request.body.wallet, '/body/wallet'),
      );
      respond(ctx, 'commitDrawSeed', 200, seed);
    },

    async getDrawSeed(request, ctx) {
      respond(ctx, 'getDrawSeed', 200, await lootBoxes.getSeed(request.params.seed_id));
    },

    async revealDrawSeed(request, ctx) {
      respond(
        ctx,
        'revealDrawSeed',
        200,
        await lootBoxes.revealSeed(actorOf(request), request.params.seed_id),
      );
    },

    async getDraw(request, ctx) {
      respond(ctx, 'getDraw', 200, await lootBoxes.getDraw(request.params.draw_id));
    },
  });
}

// Crafting operations (issue 21): a collection's recipes, and crafting one.
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, idempotencyKeyOf, limitOf, sendStored } from './ledger-request.ts';

export function recipeHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<'createRecipe' | 'listRecipes' | 'getRecipe' | 'craftRecipe'>({
    async createRecipe(request, ctx) {
      const recipe = await ledger.recipes.create(
        actorOf(request),
        request.params.collection_id,
        request.body,
      );
      ctx.set('Location', `/api/v1/recipes/${recipe.id}`);
      respond(ctx, 'createRecipe', 201, recipe);
    },

    async listRecipes(request, ctx) {
      const page = await ledger.recipes.list(request.params.collection_id, {
        limit: limitOf(request),
        cursor: cursorOf(request),
      });
      respond(ctx, 'listRecipes', 200, page);
    },

    async getRecipe(request, ctx) {
      respond(ctx, 'getRecipe', 200, await ledger.recipes.get(request.params.recipe_id));
    },

    async craftRecipe(request, ctx) {
      const input = { wallet: parseAddress(request.body.wallet, '/body/wallet'), nfts: request.body.nfts };
      const crafted = await ledger.recipes.craft(
        actorOf(request),
        request.params.recipe_id,
        input,
        idempotencyKeyOf(request),
      );
      sendStored(ctx, 'craftRecipe', crafted);
    },
  });
}

// Every ledger operation of the contract, keyed by operationId.
import type { Ledger } from '../../domain/ledger/index.ts';
import type { HandlerMap } from '../handler.ts';
import type { ReadCache } from '../read-cache.ts';
import { assetUpdateHandlers } from './asset-updates.ts';
import { assetHandlers } from './assets.ts';
import { lootBoxHandlers } from './loot-boxes.ts';
import { marketHandlers } from './market.ts';
import { priceHandlers } from './prices.ts';
import { recipeHandlers } from './recipes.ts';
import { storeHandlers } from './stores.ts';
import { tradeHandlers } from './trades.ts';
import { transferHandlers } from './transfers.ts';
import { walletHandlers } from './wallets.ts';

export function ledgerHandlers(ledger: Ledger, cache: ReadCache): HandlerMap {
  return {
    ...walletHandlers(ledger),
    ...assetHandlers(ledger, cache),
    ...assetUpdateHandlers(ledger),
    ...transferHandlers(ledger),
    ...priceHandlers(ledger),
    ...recipeHandlers(ledger),
    ...tradeHandlers(ledger),
    ...marketHandlers(ledger),
    ...storeHandlers(ledger),
    ...lootBoxHandlers(ledger),
  };
}

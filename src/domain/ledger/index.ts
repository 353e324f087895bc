// The asset ledger: wallets, collections, assets, holdings, transfers and prices, as one module the
// app builds once. Services own the rules and know nothing of HTTP.
import type { Config } from '../../config/index.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import type { ReadReplicas } from '../../db/replicas.ts';
import { keepAddresses } from './addresses.ts';
import { type AssetUpdateService, createAssetUpdateService } from './asset-updates.ts';
import { type AssetService, createAssetService } from './assets.ts';
import { type CollectionService, createCollectionService } from './collections.ts';
import { createExpiryService, type ExpiryService } from './expiries.ts';
import { createIdempotency } from './idempotency.ts';
import { createLegWriter } from './leg-writer.ts';
import { createLootBoxService, type LootBoxService } from './loot-boxes.ts';
import { createMarketService, type MarketService } from './market.ts';
import { createPriceService, type PriceService } from './prices.ts';
import { createReads, type Reads } from './reads/index.ts';
import { createRecipeService, type RecipeService } from './recipes.ts';
import type { LedgerDatabase } from './store/index.ts';
import { createStoreService, type StoreService } from './stores.ts';
import { createTradeService, type TradeService } from './trades.ts';
import { createTransferService, type TransferService } from './transfers.ts';
import { createWalletLinkService, type WalletLinkService } from './wallet-links.ts';
import { createWalletService, type WalletService } from './wallets.ts';

export interface LedgerDependencies {
  /** The database handle, and the one ledger store every service writes through. */
  database: LedgerDatabase;
  config: Pick<Config, 'publicUrl' | 'idempotencyTtlSeconds'> &
    Partial<Pick<Config, 'trades' | 'market' | 'readCache' | 'addressCacheEntries'>>;
  secretBox: SecretBox;
  /** How long a wallet-link challenge stays valid (default 10 minutes). */
  walletLinkTtlSeconds?: number;
  /** Read replicas (DATABASE_READ_URLS): the hot reads go through their routing (./reads/). */
  replicas?: ReadReplicas;
}

export interface Ledger {
  wallets: WalletService;
  walletLinks: WalletLinkService;
  collections: CollectionService;
  assets: AssetService;
  /** Freezes, unfreezes, metadata updates and their history (issue 21). */
  assetUpdates: AssetUpdateService;
  /** The hot reads: an asset, its owners, the holdings listings (./reads/port.ts). */
  reads: Reads;
  transfers: TransferService;
  recipes: RecipeService;
  trades: TradeService;
  prices: PriceService;
  /** Listings, purchases, sales and market figures (issue 35). */
  market: MarketService;
  /** Store offers and purchases (issue 36). */
  stores: StoreService;
  /** Drop tables, loot boxes, draw seeds and draws (issue 36). */
  lootBoxes: LootBoxService;
  /** Items that expire: loans, and the expiry sweep the market keeper runs (issue 36). */
  expiries: ExpiryService;
}

export function createLedger({
  database,
  config,
  secretBox,
  walletLinkTtlSeconds = 600,
  replicas,
}: LedgerDependencies): Ledger {
  const { orm, store } = database;
  // For the process (formatting an address is a pure function): the ledger built last sets it.
  if (config.addressCacheEntries !== undefined) keepAddresses(config.addressCacheEntries);
  const idempotency = createIdempotency(database, config.idempotencyTtlSeconds);
  const wallets = createWalletService(orm, secretBox);
  const legs = createLegWriter(database, idempotency, store);
  const assets = createAssetService(database, wallets, idempotency, store);
  return {
    wallets,
    walletLinks: createWalletLinkService(orm, store, {
      publicUrl: config.publicUrl,
      challengeTtlSeconds: walletLinkTtlSeconds,
    }),
    collections: createCollectionService(orm),
    assets,
    assetUpdates: createAssetUpdateService(database, idempotency, store),
    reads: createReads(database, replicas, config.readCache?.assetViews),
    transfers: createTransferService(database, idempotency, store, legs),
    recipes: createRecipeService(database, idempotency, legs),
    trades: createTradeService(orm, idempotency, store, legs, config.trades),
    prices: createPriceService(database, idempotency, store),
    market: createMarketService(database, idempotency, store, legs, config.market),
    stores: createStoreService(database, idempotency, legs),
    lootBoxes: createLootBoxService(database, idempotency, legs, secretBox),
    expiries: createExpiryService(database, idempotency, store, legs, assets),
  };
}

export type { Actor } from './actor.ts';

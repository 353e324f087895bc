import { ApiKey } from './ApiKey.ts';
import { Application } from './Application.ts';
import { Asset } from './Asset.ts';
import { AssetLastEvent } from './AssetLastEvent.ts';
import { AssetMetadataVersion } from './AssetMetadataVersion.ts';
import { AssetSupply } from './AssetSupply.ts';
import { Auction } from './Auction.ts';
import { AuditEntry, AuditTip } from './AuditEntry.ts';
import { ChainAsset } from './ChainAsset.ts';
import { ChainBlock } from './ChainBlock.ts';
import { ChainContract } from './ChainContract.ts';
import { ChainHolding } from './ChainHolding.ts';
import { ChainLease } from './ChainLease.ts';
import { ChainTransfer } from './ChainTransfer.ts';
import { ChainTransferRemoval } from './ChainTransferRemoval.ts';
import { ClientSecret } from './ClientSecret.ts';
import { Collection } from './Collection.ts';
import { CollectionMarket } from './CollectionMarket.ts';
import { CurrencyLot } from './CurrencyLot.ts';
import { Holding } from './Holding.ts';
import { IdempotencyRecord } from './IdempotencyRecord.ts';
import { Identity } from './Identity.ts';
import { IssuedCredential } from './IssuedCredential.ts';
import { LedgerChange } from './LedgerChange.ts';
import { Listing } from './Listing.ts';
import { ListingTrait } from './ListingTrait.ts';
import { DrawRecord, DrawSeed, DropTable, LootBox, LootBoxPity } from './LootBox.ts';
import { Offer } from './Offer.ts';
import { OidcPayload } from './OidcPayload.ts';
import { OutboxEvent } from './OutboxEvent.ts';
import { PriceObservation } from './PriceObservation.ts';
import { Recipe } from './Recipe.ts';
import { Sale } from './Sale.ts';
import { SequenceCounter } from './SequenceCounter.ts';
import { ServiceAccount } from './ServiceAccount.ts';
import { SigningKey } from './SigningKey.ts';
import { SiweChallenge } from './SiweChallenge.ts';
import { StatusList } from './StatusList.ts';
import { StoreOffer, StoreOfferWallet, StorePurchase } from './StoreOffer.ts';
import { Trade } from './Trade.ts';
import { TradeRefusal } from './TradeRefusal.ts';
import { Transfer } from './Transfer.ts';
import { User } from './User.ts';
import { Wallet } from './Wallet.ts';
import { WalletLastEvent } from './WalletLastEvent.ts';
import { WebhookDelivery } from './WebhookDelivery.ts';
import { WebhookSubscription } from './WebhookSubscription.ts';

export {
  ApiKey,
  Application,
  Asset,
  AssetLastEvent,
  AssetMetadataVersion,
  AssetSupply,
  Auction,
  AuditEntry,
  AuditTip,
  ChainAsset,
  ChainBlock,
  ChainContract,
  ChainHolding,
  ChainLease,
  ChainTransfer,
  ChainTransferRemoval,
  ClientSecret,
  Collection,
  CollectionMarket,
  CurrencyLot,
  DrawRecord,
  DrawSeed,
  DropTable,
  Holding,
  IdempotencyRecord,
  Identity,
  IssuedCredential,
  LedgerChange,
  Listing,
  ListingTrait,
  LootBox,
  LootBoxPity,
  Offer,
  OidcPayload,
  OutboxEvent,
  PriceObservation,
  Recipe,
  Sale,
  SequenceCounter,
  ServiceAccount,
  SigningKey,
  SiweChallenge,
  StatusList,
  StoreOffer,
  StoreOfferWallet,
  StorePurchase,
  Trade,
  TradeRefusal,
  Transfer,
  User,
  Wallet,
  WalletLastEvent,
  WebhookDelivery,
  WebhookSubscription,
};

/**
 * Every entity, registered explicitly: no folder scanning, so nothing depends on a build layout.
 * PostgreSQL does not index foreign keys by itself (SQLite's generator does): relations that are
 * looked up by carry an explicit `.index()`.
 */
export const entities = [
  User,
  Application,
  ApiKey,
  OidcPayload,
  SigningKey,
  Wallet,
  SiweChallenge,
  Collection,
  Asset,
  Holding,
  Transfer,
  IdempotencyRecord,
  PriceObservation,
  OutboxEvent,
  LedgerChange,
  Identity,
  IssuedCredential,
  StatusList,
  SequenceCounter,
  ServiceAccount,
  ClientSecret,
  WebhookSubscription,
  WebhookDelivery,
  ChainContract,
  ChainBlock,
  ChainTransfer,
  ChainHolding,
  ChainLease,
  ChainAsset,
  ChainTransferRemoval,
  AssetMetadataVersion,
  Trade,
  TradeRefusal,
  Recipe,
  Listing,
  ListingTrait,
  Sale,
  CollectionMarket,
  Offer,
  // Stores (issue 36)
  StoreOffer,
  StoreOfferWallet,
  StorePurchase,
  // Loot boxes and draws (issue 36)
  DropTable,
  LootBox,
  LootBoxPity,
  DrawSeed,
  DrawRecord,
  Auction,
  AuditEntry,
  AuditTip,
  // Timed currency grants (issue 36)
  CurrencyLot,
  // A currency's supply, apart from its asset row (issue 34 item 5)
  AssetSupply,
  // An NFT's newest event, bounding its event reads on PostgreSQL (issue 34)
  AssetLastEvent,
  // A wallet's newest event, bounding its event reads on PostgreSQL (issue 34)
  WalletLastEvent,
];

// The ledger's resources as the contract publishes them (Asset, Transfer, Price, Wallet, Collection).
// The REST API and the outbox events share these, so an event's `data` is exactly what a GET returns.
import type { components } from '../../../generated/openapi/types.ts';
import type { Asset } from '../../db/entities/Asset.ts';
import type { Collection } from '../../db/entities/Collection.ts';
import type { PriceObservation } from '../../db/entities/PriceObservation.ts';
import type { Transfer } from '../../db/entities/Transfer.ts';
import type { Wallet } from '../../db/entities/Wallet.ts';
import { formatAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount } from './amounts.ts';

type Schemas = components['schemas'];

// The views are the contract's schemas (generated/openapi/types.ts): a field the contract renames,
// retypes or adds fails typecheck here, not in a test.
export type AssetMetadataView = Schemas['AssetMetadata'];
export type AssetView = Schemas['Asset'];
export type TransferView = Schemas['Transfer'];
export type PriceView = Schemas['Price'];
export type WalletView = Schemas['Wallet'];
export type CollectionView = Schemas['Collection'];
export type RecipeView = Schemas['Recipe'];
export type TradeView = Schemas['Trade'];
export type TradeStatusView = Schemas['TradeStatus'];
export type TradeSettlementView = Schemas['TradeSettlement'];
export type TradeRefusalView = Schemas['TradeRefusal'];
export type RecipeInputView = Schemas['RecipeInput'];
export type RecipeOutputView = Schemas['RecipeOutput'];
export type AssetSourceView = Schemas['AssetSource'];
export type ListingView = Schemas['Listing'];
export type SaleView = Schemas['Sale'];
export type PurchaseView = Schemas['Purchase'];
export type MarketSettingsView = Schemas['MarketSettings'];
export type MarketStatsView = Schemas['MarketStats'];
export type OfferView = Schemas['Offer'];
export type OfferAcceptanceView = Schemas['OfferAcceptance'];
export type AuctionView = Schemas['Auction'];

/** Decimals of an asset's amounts: an NFT is indivisible. */
export function decimalsOf(asset: Pick<Asset, 'kind' | 'decimals'>): number {
  return asset.kind === 'nft' ? 0 : (asset.decimals ?? 0);
}

/** What an asset's view is made of: an entity, or a row read without the ORM's entities (listings). */
export type AssetFields = Pick<
  Asset,
  | 'id'
  | 'kind'
  | 'name'
  | 'description'
  | 'metadata'
  | 'owner'
  | 'symbol'
  | 'decimals'
  | 'maxSupply'
  | 'createdAt'
> & {
  collection: { id: string };
  /** A currency's total supply (its row in asset_supply, issue 34 item 5); null for an NFT. */
  totalSupply: bigint | null;
  /** An on-chain token's CAIP-19 id (chain_asset.caip19); absent or null for a ledger asset. */
  caip19?: string | null;
  /** Frozen by its studio (absent: false). */
  frozen?: boolean;
  /** Who froze it (a user id), null while it is not frozen (absent: null). */
  frozenBy?: string | null;
  /** Soulbound itself or through its collection (absent: false). */
  soulbound?: boolean;
  /** Its metadata version (absent: 0, as created). */
  metadataVersion?: number;
  /** Issue 36, items that expire: its end time (absent or null: none) and the wallet that lent it. */
  expiresAt?: Date | null;
  lender?: string | null;
};

const CAIP19 = /^eip155:([0-9]+)\/(erc721|erc1155|erc20):(0x[0-9a-fA-F]{40})(?:\/([0-9]+))?$/;

/** Where an asset lives: the ledger, or the chain token its CAIP-19 id names. */
export function assetSourceOf(caip19: string | null | undefined): AssetSourceView {
  const match = caip19 ? CAIP19.exec(caip19) : null;
  if (!caip19 || !match) return { type: 'ledger' };
  const [, chainId, standard, contract, tokenId] = match as unknown as [
    string,
    string,
    string,
    string,
    string?,
  ];
  return {
    type: 'chain',
    chainId: Number(chainId),
    standard: standard as 'erc721' | 'erc1155' | 'erc20',
    contract,
    tokenId: tokenId ?? null,
    caip19,
  };
}

/**
 * The fields that change only with a new metadata version (`metadataVersion`: PATCH
 * /api/v1/assets/{id}/metadata, a late on-chain metadata fetch) or never: every field but its `owner`
 * (an NFT's changes with each transfer and its burn), its `totalSupply` (a currency's changes with each
 * mint and burn) and `frozen` (a freeze or an unfreeze writes no version). A view kept for an asset is
 * good for as long as its `metadataVersion` is the row's.
 */
export type FixedAssetFields = Omit<
  AssetFields,
  'owner' | 'totalSupply' | 'frozen' | 'frozenBy' | 'expiresAt' | 'lender'
>;

/**
 * The part of an asset's view made of its fixed fields (all but `owner`, `totalSupply`, `burned`,
 * `frozen`, `frozenBy`).
 */
export type FixedAssetView = Omit<
  AssetView,
  'owner' | 'totalSupply' | 'burned' | 'frozen' | 'frozenBy' | 'expiresAt' | 'lender'
>;

/** Issue 36: an item's end time and lender as read (a loan sets them and a return clears them). */
export interface AssetExpiry {
  expiresAt: Date | null;
  lender: string | null;
}

export function fixedAssetView(asset: FixedAssetFields): FixedAssetView {
  const decimals = decimalsOf(asset);
  return {
    id: asset.id,
    kind: asset.kind,
    name: asset.name,
    description: asset.description ?? null,
    metadata: asset.metadata as unknown as AssetMetadataView,
    collection: asset.collection.id,
    symbol: asset.symbol ?? null,
    decimals: asset.kind === 'fungible' ? decimals : null,
    maxSupply: asset.maxSupply == null ? null : formatAmount(asset.maxSupply, decimals),
    createdAt: asset.createdAt.toISOString(),
    source: assetSourceOf(asset.caip19),
    soulbound: asset.soulbound ?? false,
    metadataVersion: asset.metadataVersion ?? 0,
  };
}

/** An asset's view from its fixed part and its changing fields (`totalSupply` formatted). */
export function assetViewOf(
  fixed: FixedAssetView,
  owner: string | null | undefined,
  totalSupply: string | null,
  frozen: boolean,
  frozenBy: string | null,
  expiry?: AssetExpiry,
): AssetView {
  // A burned NFT keeps its row, owned by the zero address (POST /api/v1/assets/{id}/burn).
  const burned = owner === ZERO_ADDRESS;
  return {
    id: fixed.id,
    kind: fixed.kind,
    name: fixed.name,
    description: fixed.description,
    metadata: fixed.metadata,
    collection: fixed.collection,
    owner: owner && !burned ? formatAddress(owner) : null,
    symbol: fixed.symbol,
    decimals: fixed.decimals,
    totalSupply,
    maxSupply: fixed.maxSupply,
    createdAt: fixed.createdAt,
    source: fixed.source,
    burned,
    frozen,
    // Who froze it while it is frozen: an unfreeze never leaves a stale one behind.
    frozenBy: frozen ? frozenBy : null,
    soulbound: fixed.soulbound,
    metadataVersion: fixed.metadataVersion,
    // Issue 36: only an item with an end time carries it (and its lender, null unless lent).
    ...(expiry?.expiresAt && {
      expiresAt: expiry.expiresAt.toISOString(),
      lender: expiry.lender ? formatAddress(expiry.lender) : null,
    }),
  };
}

export function assetView(asset: AssetFields): AssetView {
  const totalSupply = asset.totalSupply == null ? null : formatAmount(asset.totalSupply, decimalsOf(asset));
  return assetViewOf(
    fixedAssetView(asset),
    asset.owner,
    totalSupply,
    asset.frozen ?? false,
    asset.frozenBy ?? null,
    { expiresAt: asset.expiresAt ?? null, lender: asset.lender ?? null },
  );
}

/** What a transfer's view is made of: an entity, or the values a transfer was just written with. */
export type TransferFields = Pick<
  Transfer,
  'id' | 'fromAddress' | 'toAddress' | 'amount' | 'status' | 'createdAt' | 'completedAt' | 'failureReason'
> & { asset: { id: string } };

export function transferView(transfer: TransferFields, decimals: number): TransferView {
  return {
    id: transfer.id,
    assetId: transfer.asset.id,
    from: formatAddress(transfer.fromAddress),
    to: formatAddress(transfer.toAddress),
    amount: formatAmount(transfer.amount as bigint, decimals),
    status: transfer.status,
    createdAt: transfer.createdAt.toISOString(),
    completedAt: transfer.completedAt ? transfer.completedAt.toISOString() : null,
    failureReason: transfer.failureReason ?? null,
  };
}

export function priceView(observation: PriceObservation): PriceView {
  return {
    assetId: observation.asset.id,
    price: observation.price,
    currency: observation.currency,
    source: observation.source,
    observedAt: observation.observedAt.toISOString(),
  };
}

export function walletView(wallet: Wallet): WalletView {
  return {
    address: formatAddress(wallet.address),
    kind: wallet.kind,
    createdAt: wallet.createdAt.toISOString(),
  };
}

export function collectionView(collection: Collection): CollectionView {
  return {
    id: collection.id,
    name: collection.name,
    description: collection.description ?? null,
    owner: collection.owner.id,
    createdAt: collection.createdAt.toISOString(),
    soulbound: collection.soulbound,
    burnPolicy: collection.burnPolicy,
    mutableAttributes: collection.mutableAttributes ?? [],
    metadataPolicy: {
      name: collection.metadataPolicy?.name === true,
      image: collection.metadataPolicy?.image === true,
      description: collection.metadataPolicy?.description === true,
    },
  };
}

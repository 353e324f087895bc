// What a mint writes: the plan parts that create an NFT or supply of a currency (its asset row or
// transfer from the zero address, holding, answer and event), shared by the asset service, batch
// mints, crafts, store purchases and loot box openings; and the checks they share.

import { ConflictError, ForbiddenError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { newNftEvent, newTransferEvent } from './outbox.ts';
import type { BalanceChange, NewAsset, NewEvent, NewLot, NewTransfer } from './store/plan.ts';
import {
  type AssetMetadataView,
  type AssetView,
  assetView,
  type TransferView,
  transferView,
} from './views.ts';

export class MaxSupplyExceededError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/max-supply-exceeded');
  }
}

/** A mint's answer: a completed transfer from the zero address. */
export function mintView(
  id: string,
  currencyId: string,
  to: StoredAddress,
  amount: bigint,
  decimals: number,
  at: Date,
): TransferView {
  const fields = { fromAddress: ZERO_ADDRESS, toAddress: to, amount, status: 'completed' as const };
  return transferView(
    { id, asset: { id: currencyId }, ...fields, failureReason: null, createdAt: at, completedAt: at },
    decimals,
  );
}

/** An NFT template: what a new NFT is made of (a create, a batch mint item, a recipe's output). */
export interface NftTemplate {
  name: string;
  description?: string;
  metadata: AssetMetadataView;
  /** This NFT is soulbound (its collection may also make every NFT of it soulbound). */
  soulbound?: boolean;
  /** Issue 36: its end time (checked by the caller: `endTimeOf`): burned at it. */
  expiresAt?: string | Date;
}

/**
 * A new NFT of `collectionId` owned by `to`: its asset row, its holding, its view and `newNFT` event
 * (the view soulbound when the NFT or its collection is).
 */
export function nftMintParts(
  template: NftTemplate,
  collectionId: string,
  creatorId: string,
  to: StoredAddress,
  at: Date,
  collectionSoulbound = false,
): { asset: NewAsset; view: AssetView; balance: BalanceChange; event: NewEvent } {
  const asset: NewAsset = {
    id: newId('nft'),
    kind: 'nft',
    name: template.name,
    description: template.description ?? null,
    metadata: template.metadata as unknown as Record<string, unknown>,
    collectionId,
    creatorId,
    symbol: null,
    decimals: null,
    totalSupply: null,
    maxSupply: null,
    owner: to,
    mintedTo: to,
    soulbound: template.soulbound === true,
    createdAt: at,
    ...(template.expiresAt !== undefined && { expiresAt: new Date(template.expiresAt) }),
  };
  const view = assetView({
    ...asset,
    collection: { id: collectionId },
    soulbound: asset.soulbound || collectionSoulbound,
  });
  return { asset, view, balance: { assetId: asset.id, wallet: to, delta: 1n }, event: newNftEvent(view, at) };
}

/** Supply of a currency minted to `to`: its transfer row (from the zero address), holding credit, view and event. */
export function currencyMintParts(
  currency: { id: string; collectionId: string; decimals: number },
  to: StoredAddress,
  amount: bigint,
  requestedBy: string,
  at: Date,
): { transfer: NewTransfer; view: TransferView; balance: BalanceChange; event: NewEvent } {
  const id = newId('tr');
  const view = mintView(id, currency.id, to, amount, currency.decimals, at);
  return {
    transfer: { id, assetId: currency.id, from: ZERO_ADDRESS, to, amount, requestedBy, createdAt: at },
    view,
    balance: { assetId: currency.id, wallet: to, delta: amount },
    event: newTransferEvent(view, currency.collectionId, at),
  };
}

/** Issue 36: the lot of timed units a currency mint's transfer grants, ending at `expiresAt`. */
export function timedLot(transfer: NewTransfer, expiresAt: Date): NewLot {
  return {
    id: newId('lot'),
    assetId: transfer.assetId,
    wallet: transfer.to,
    amount: transfer.amount,
    expiresAt,
    sourceId: transfer.id,
    createdAt: transfer.createdAt,
  };
}

/** Issue 36: an end time given in a request: a valid instant after `at` (and, for a loan, within a year). */
export function endTimeOf(text: string, at: Date, pointer: string, maxSeconds?: number): Date {
  const end = new Date(text);
  const ms = end.getTime() - at.getTime();
  if (Number.isNaN(ms) || ms <= 0 || (maxSeconds !== undefined && ms > maxSeconds * 1000)) {
    const detail =
      maxSeconds === undefined ? 'must be in the future' : 'must be in the future, at most a year ahead';
    throw new ValidationError(`The end time ${detail}.`, [{ pointer, detail }]);
  }
  return end;
}

/** The audit trail's object of a mint: the asset, in its collection, its studio's. */
export function mintedObject(assetId: string, studio: string | null, collectionId: string) {
  return { type: 'asset', id: assetId, ownerId: studio, collectionId };
}

export function noMintWallet(): ForbiddenError {
  return new ForbiddenError(
    'You have no custodial wallet to mint into; name one with `to`.',
    '/problems/wallet-not-controlled',
  );
}

// Batch mints (issue 21): many NFTs and currency supplies in one plan.

import { Asset } from '../../db/entities/Asset.ts';
import type { Orm } from '../../db/orm.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { type AuditDraft, auditDraft } from '../audit.ts';
import { mayMintCurrency } from '../authorization.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { requireMintableCollection } from './collections.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { currencyMintParts, endTimeOf, MaxSupplyExceededError, mintedObject, nftMintParts } from './mints.ts';
import type { LedgerStore, NewAsset, Plan } from './store/plan.ts';
import type { AssetMetadataView, AssetView, TransferView } from './views.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

/** One item of a batch mint: a new NFT, or supply of a currency, for `to`. */
export type MintBatchItemInput =
  | {
      to: StoredAddress;
      nft: {
        name: string;
        description?: string;
        metadata: AssetMetadataView;
        soulbound?: boolean;
        /** Issue 36: the NFT's end time (RFC 3339, in the future). */
        expiresAt?: string;
      };
    }
  | { to: StoredAddress; currency: string; amount: string };

export interface MintBatchView {
  id: string;
  nfts: AssetView[];
  mints: TransferView[];
}

/** The most items one batch mint takes (the contract's `MintBatchRequest.items.maxItems`). */
export const MAX_MINT_BATCH_ITEMS = 100;

/**
 * A batch mint (issue 21): up to MAX_MINT_BATCH_ITEMS new NFTs of one collection and currency
 * supplies, to any wallets, as one plan: all or none.
 */
export async function mintBatch(
  deps: { orm: Orm; idempotency: Idempotency; store: LedgerStore },
  actor: Actor,
  collectionId: string,
  items: MintBatchItemInput[],
  idempotencyKey?: string,
): Promise<WriteResult<MintBatchView>> {
  const { orm, idempotency, store } = deps;
  if (items.length === 0 || items.length > MAX_MINT_BATCH_ITEMS) {
    throw new ValidationError(`A batch mint holds 1 to ${MAX_MINT_BATCH_ITEMS} items.`, [
      { pointer: '/body/items', detail: `must hold 1 to ${MAX_MINT_BATCH_ITEMS} items` },
    ]);
  }
  items.forEach((item, i) => {
    if (item.to === ZERO_ADDRESS) {
      throw new ValidationError(`Item ${i}: nothing can be minted to the zero address.`, [
        { pointer: `/body/items/${i}/to`, detail: 'must not be the zero address' },
      ]);
    }
  });
  const key = idempotency.keyOf({
    userId: actor.userId,
    operation: 'mintBatch',
    key: idempotencyKey,
    request: { collectionId, items },
  });
  const at = new Date();
  const plan = {
    assets: [] as NewAsset[],
    balances: [] as { assetId: string; wallet: StoredAddress; delta: bigint }[],
    supplies: new Map<string, { delta: bigint; max: bigint; decimals: number; item: number }>(),
    transfers: [] as NonNullable<Plan['transfers']>,
    events: [] as NonNullable<Plan['events']>,
  };
  const nfts: AssetView[] = [];
  const mints: TransferView[] = [];
  const audit: AuditDraft[] = [];
  try {
    const em = orm.em.fork();
    const { soulbound: collectionSoulbound, owner: studio } = await requireMintableCollection(
      em,
      actor,
      collectionId,
    );
    const minted = (assetId: string, after: Record<string, unknown>) =>
      audit.push(auditDraft('asset.minted', mintedObject(assetId, studio.id, collectionId), { after }, at));
    const currencies = new Map<string, Asset>();
    for (const [i, item] of items.entries()) {
      if ('nft' in item) {
        if (item.nft.expiresAt !== undefined)
          endTimeOf(item.nft.expiresAt, at, `/body/items/${i}/nft/expiresAt`);
        const { asset, view, balance, event } = nftMintParts(
          item.nft,
          collectionId,
          actor.userId,
          item.to,
          at,
          collectionSoulbound,
        );
        plan.assets.push(asset);
        plan.balances.push(balance);
        plan.events.push(event);
        nfts.push(view);
        minted(asset.id, { kind: 'nft', to: item.to, name: asset.name });
        continue;
      }
      let currency = currencies.get(item.currency);
      if (!currency) {
        const found = await em.findOne(Asset, {
          id: item.currency,
          kind: 'fungible',
          collection: collectionId,
        });
        if (!found)
          throw new NotFoundError(
            `Item ${i}: no currency ${item.currency} in the collection ${collectionId}.`,
          );
        if (!mayMintCurrency(actor, found.creator.id))
          throw new ForbiddenError(
            `Item ${i}: only the creator of ${item.currency} or an admin may mint it.`,
          );
        currency = found;
        currencies.set(item.currency, currency);
      }
      const decimals = currency.decimals ?? 0;
      let amount: bigint;
      try {
        amount = parseAmount(item.amount, decimals, {
          pointer: `/body/items/${i}/amount`,
          positive: true,
        });
      } catch (error) {
        if (!(error instanceof InvalidAmountError)) throw error;
        throw new InvalidAmountError(
          `Item ${i}: ${error.detail}`,
          `/body/items/${i}/amount`,
          error.errors?.[0]?.detail ?? '',
        );
      }
      const supply = plan.supplies.get(currency.id);
      if (supply) supply.delta += amount;
      else
        plan.supplies.set(currency.id, {
          delta: amount,
          max: currency.maxSupply ?? UINT256_MAX,
          decimals,
          item: i,
        });
      const { transfer, view, balance, event } = currencyMintParts(
        { id: currency.id, collectionId, decimals },
        item.to,
        amount,
        actor.userId,
        at,
      );
      plan.balances.push(balance);
      plan.transfers.push(transfer);
      plan.events.push(event);
      mints.push(view);
      minted(currency.id, { kind: 'fungible', to: item.to, amount, transfer: transfer.id });
    }
  } catch (error) {
    return earlierAnswerOr(idempotency, key, error);
  }
  const supplies = [...plan.supplies.entries()];
  const operationId = newId('op');
  return applyWrite(
    store,
    idempotency,
    key,
    {
      at,
      guards: supplies.map(([assetId, { delta, max }]) => ({
        kind: 'supplyWithin',
        assetId,
        adding: delta,
        max,
      })),
      assets: plan.assets,
      supplies: supplies.map(([assetId, { delta }]) => ({ assetId, delta })),
      balances: plan.balances,
      transfers: plan.transfers,
      events: plan.events,
      operationId,
      audit,
    },
    { status: 201, body: { id: operationId, nfts, mints }, headers: {} },
    ({ guard, found = 0n }) => {
      const assetId = (guard as { assetId: string }).assetId;
      const { delta, max, decimals, item } = plan.supplies.get(assetId) as {
        delta: bigint;
        max: bigint;
        decimals: number;
        item: number;
      };
      return new MaxSupplyExceededError(
        `Item ${item}: minting ${formatAmount(delta, decimals)} ${assetId} in this batch would bring the supply to ${formatAmount(found + delta, decimals)}, past its max supply ${formatAmount(max, decimals)}.`,
      );
    },
  );
}

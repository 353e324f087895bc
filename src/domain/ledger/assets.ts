// Creating assets: NFTs (minted straight into a wallet the caller controls) and game currencies
// (created empty, then minted into any wallet as transfers from the zero address).

import type { Database } from '../../db/database.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { auditDraft } from '../audit.ts';
import { isPersonalCollection, mayMintCurrency } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { AssetOnChainError, isChainAssetId } from './chain-assets.ts';
import { ensurePersonalCollection, requireMintableCollection } from './collections.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { type MintBatchItemInput, type MintBatchView, mintBatch } from './mint-batch.ts';
import {
  currencyMintParts,
  endTimeOf,
  MaxSupplyExceededError,
  mintedObject,
  nftMintParts,
  noMintWallet,
  timedLot,
} from './mints.ts';
import { assetById, assetNotFound } from './reads/queries.ts';
import type { LedgerStore, NewAsset } from './store/plan.ts';
import { type AssetMetadataView, type AssetView, assetView, type TransferView } from './views.ts';
import { WalletNotControlledError, type WalletService } from './wallets.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

export interface CreateNftInput {
  name: string;
  description?: string;
  metadata: AssetMetadataView;
  /** A collection the caller owns; defaults to the caller's personal collection. */
  collection?: string;
  /** Owner; defaults to the caller's custodial wallet. */
  to?: StoredAddress;
  /** Non-transferable (default false). */
  soulbound?: boolean;
  /** Issue 36: the NFT's end time (RFC 3339, in the future): burned at it. */
  expiresAt?: string;
}

export interface CreateCurrencyInput {
  id: string;
  name: string;
  symbol: string;
  decimals: number;
  maxSupply?: string;
  collection: string;
  description?: string;
  metadata: AssetMetadataView;
}

export interface MintInput {
  to: StoredAddress;
  amount: string;
  /** Issue 36: a timed grant: the units end then (RFC 3339, in the future); a lot of the wallet. */
  expiresAt?: string;
}

export interface AssetService {
  get(id: string): Promise<AssetView>;
  createNft(actor: Actor, input: CreateNftInput, idempotencyKey?: string): Promise<WriteResult<AssetView>>;
  createCurrency(
    actor: Actor,
    input: CreateCurrencyInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<AssetView>>;
  mint(
    actor: Actor,
    currencyId: string,
    input: MintInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<TransferView>>;
  /** Mints every item into `collectionId` or none (an airdrop); a rejected item is named (`Item i:`). */
  mintBatch(
    actor: Actor,
    collectionId: string,
    items: MintBatchItemInput[],
    idempotencyKey?: string,
  ): Promise<WriteResult<MintBatchView>>;
}

class AssetExistsError extends ConflictError {
  constructor(id: string) {
    super(`An asset with id ${id} already exists.`, '/problems/asset-exists');
  }
}

export { assetNotFound };

export function createAssetService(
  { orm, reads: statements }: Database,
  wallets: WalletService,
  idempotency: Idempotency,
  store: LedgerStore,
): AssetService {
  return {
    // The API's GET /assets/{id} is the Reads port's (./reads/port.ts); this, the same read, for the domain.
    get: (id) => assetById(statements, id),

    async createNft(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createNft',
        key: idempotencyKey,
        request: input,
      });
      let owner: StoredAddress | undefined;
      let collection: string;
      let collectionSoulbound = false;
      let studio: string | null = null;
      try {
        const em = orm.em.fork();
        owner = input.to ?? (await wallets.controlledAddresses(em, actor.userId))[0];
        if (!owner) throw noMintWallet();
        // Control answers before the collection (403 wallet-not-controlled first); the plan checks it again.
        await wallets.assertControls(em, actor.userId, owner);
        if (input.expiresAt !== undefined) endTimeOf(input.expiresAt, new Date(), '/body/expiresAt');
        if (input.collection === undefined) collection = await ensurePersonalCollection(em, actor);
        else {
          collection = input.collection;
          const found = await requireMintableCollection(em, actor, collection);
          collectionSoulbound = found.soulbound;
          // Issue 37: a mint into a studio's collection (not a personal one) is audited.
          if (!isPersonalCollection(collection)) studio = found.owner.id;
        }
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = new Date();
      const { asset, view, balance, event } = nftMintParts(
        input,
        collection,
        actor.userId,
        owner,
        at,
        collectionSoulbound,
      );
      return applyWrite(
        store,
        idempotency,
        key,
        {
          at,
          guards: [{ kind: 'controls', userId: actor.userId, wallet: owner }],
          assets: [asset],
          balances: [balance],
          events: [event],
          audit:
            studio === null
              ? undefined
              : [
                  auditDraft(
                    'asset.minted',
                    mintedObject(asset.id, studio, collection),
                    { after: { kind: 'nft', to: owner, name: asset.name } },
                    at,
                  ),
                ],
        },
        { status: 201, body: view, headers: { Location: `/assets/${asset.id}` } },
        () => new WalletNotControlledError(owner),
      );
    },

    mintBatch: (actor, collectionId, items, idempotencyKey) =>
      mintBatch({ orm, idempotency, store }, actor, collectionId, items, idempotencyKey),

    async createCurrency(actor, input, idempotencyKey) {
      const maxSupply =
        input.maxSupply === undefined
          ? null
          : parseAmount(input.maxSupply, input.decimals, {
              pointer: '/body/maxSupply',
              positive: true,
              label: 'maxSupply',
            });
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createCurrency',
        key: idempotencyKey,
        request: input,
      });
      let studio: string;
      try {
        studio = (await requireMintableCollection(orm.em.fork(), actor, input.collection)).owner.id;
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = new Date();
      const asset: NewAsset = {
        id: input.id,
        kind: 'fungible',
        name: input.name,
        description: input.description ?? null,
        metadata: input.metadata as unknown as Record<string, unknown>,
        collectionId: input.collection,
        creatorId: actor.userId,
        symbol: input.symbol,
        decimals: input.decimals,
        totalSupply: 0n,
        maxSupply,
        owner: null,
        createdAt: at,
      };
      return applyWrite(
        store,
        idempotency,
        key,
        {
          at,
          guards: [{ kind: 'assetAbsent', assetId: asset.id }],
          assets: [asset],
          audit: [
            auditDraft(
              'currency.created',
              mintedObject(asset.id, studio, asset.collectionId),
              { after: { name: asset.name, symbol: asset.symbol, decimals: asset.decimals, maxSupply } },
              at,
            ),
          ],
        },
        {
          status: 201,
          body: assetView({ ...asset, collection: { id: asset.collectionId } }),
          headers: { Location: `/assets/${asset.id}` },
        },
        () => new AssetExistsError(input.id),
      );
    },

    async mint(actor, currencyId, input, idempotencyKey) {
      if (input.to === ZERO_ADDRESS) {
        throw new ValidationError('Supply cannot be minted to the zero address.', [
          { pointer: '/body/to', detail: 'must not be the zero address' },
        ]);
      }
      // The currency's creator, decimals, cap and collection never change once it exists.
      const currency = await orm.em
        .fork()
        .findOne(Asset, { id: currencyId, kind: 'fungible' }, { populate: ['collection'] });
      if (!currency) throw new NotFoundError(`No currency with id ${currencyId}.`);
      if (isChainAssetId(currencyId)) throw new AssetOnChainError(currencyId);
      if (!mayMintCurrency(actor, currency.creator.id)) {
        throw new ForbiddenError(`Only the creator of ${currencyId} or an admin may mint it.`);
      }
      const decimals = currency.decimals ?? 0;
      const amount = parseAmount(input.amount, decimals, { pointer: '/body/amount', positive: true });
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'mintCurrency',
        key: idempotencyKey,
        request: { currencyId, ...input },
      });
      const at = new Date();
      let ends: Date | null;
      try {
        ends = input.expiresAt === undefined ? null : endTimeOf(input.expiresAt, at, '/body/expiresAt');
      } catch (error) {
        // A retry of a grant answered before its end time passed replays that answer (the crash
        // test's economy run resends answered requests later, as lost answers).
        return earlierAnswerOr(idempotency, key, error);
      }
      const { transfer, view, balance, event } = currencyMintParts(
        { id: currencyId, collectionId: currency.collection.id, decimals },
        input.to,
        amount,
        actor.userId,
        at,
      );
      const maxSupply = currency.maxSupply ?? null;
      return applyWrite(
        store,
        idempotency,
        key,
        {
          at,
          // An uncapped supply still ends at the column's 2^256-1 (13.9: past it the write failed, a 500).
          guards: [
            { kind: 'supplyWithin', assetId: currencyId, adding: amount, max: maxSupply ?? UINT256_MAX },
          ],
          supplies: [{ assetId: currencyId, delta: amount }],
          balances: [balance],
          transfers: [transfer],
          // Issue 36: timed units are a lot of the wallet (docs/architecture/stores-and-rewards.md).
          lots: ends ? [timedLot(transfer, ends)] : undefined,
          events: [event],
          audit: [
            auditDraft(
              'asset.minted',
              mintedObject(currencyId, currency.collection.getEntity().owner.id, currency.collection.id),
              {
                after: {
                  kind: 'fungible',
                  to: input.to,
                  amount,
                  transfer: transfer.id,
                  ...(ends && { expiresAt: ends.toISOString() }),
                },
              },
              at,
            ),
          ],
        },
        { status: 201, body: view, headers: { Location: `/api/v1/transfers/${transfer.id}` } },
        ({ found = 0n }) => {
          const supply = found + amount;
          if (maxSupply === null) {
            return new InvalidAmountError(
              `Minting ${formatAmount(amount, decimals)} ${currencyId} would bring the supply past ${formatAmount(UINT256_MAX, decimals)}, the most the ledger can hold.`,
              '/body/amount',
              'would bring the total supply past 2^256-1 base units',
            );
          }
          return new MaxSupplyExceededError(
            `Minting ${formatAmount(amount, decimals)} ${currencyId} would bring the supply to ${formatAmount(supply, decimals)}, past its max supply ${formatAmount(maxSupply, decimals)}.`,
          );
        },
      );
    },
  };
}

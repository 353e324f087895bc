// Creating assets: NFTs (minted straight into a wallet the caller controls) and game currencies
// (created empty, then minted into any wallet as transfers from the zero address).

import { Asset } from '../../db/entities/Asset.ts';
import type { Orm } from '../../db/orm.ts';
import { readStatements } from '../../db/read-statements.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { type AuditDraft, auditDraft } from '../audit.ts';
import { isPersonalCollection, mayMintCurrency } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { ASSET_COLUMNS, assetFieldsOf } from './asset-rows.ts';
import { AssetOnChainError, isChainAssetId } from './chain-assets.ts';
import { ensurePersonalCollection, requireMintableCollection } from './collections.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { newNftEvent, newTransferEvent } from './outbox.ts';
import type { BalanceChange, LedgerStore, NewAsset, NewEvent, NewTransfer, Plan } from './store/plan.ts';
import {
  type AssetMetadataView,
  type AssetView,
  assetView,
  type TransferView,
  transferView,
} from './views.ts';
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
}

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

export class MaxSupplyExceededError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/max-supply-exceeded');
  }
}

/** A mint's answer: a completed transfer from the zero address. */
function mintView(
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

export function assetNotFound(id: string): NotFoundError {
  return new NotFoundError(`No asset with id ${id}.`);
}

export function createAssetService(
  orm: Orm,
  wallets: WalletService,
  idempotency: Idempotency,
  store: LedgerStore,
): AssetService {
  const statements = readStatements(orm);
  return {
    // A hot read: one prepared statement, the view built from the row (no entity).
    async get(id) {
      const [row] = await statements.all(`select ${ASSET_COLUMNS} from asset a where a.id = ?`, [id]);
      if (!row) throw assetNotFound(id);
      return assetView(assetFieldsOf(row, statements));
    },

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

    async mintBatch(actor, collectionId, items, idempotencyKey) {
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
          audit.push(
            auditDraft('asset.minted', mintedObject(assetId, studio.id, collectionId), { after }, at),
          );
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
    },

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
          events: [event],
          audit: [
            auditDraft(
              'asset.minted',
              mintedObject(currencyId, currency.collection.getEntity().owner.id, currency.collection.id),
              { after: { kind: 'fungible', to: input.to, amount, transfer: transfer.id } },
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

/** The audit trail's object of a mint: the asset, in its collection, its studio's. */
function mintedObject(assetId: string, studio: string | null, collectionId: string) {
  return { type: 'asset', id: assetId, ownerId: studio, collectionId };
}

function noMintWallet(): ForbiddenError {
  return new ForbiddenError(
    'You have no custodial wallet to mint into; name one with `to`.',
    '/problems/wallet-not-controlled',
  );
}

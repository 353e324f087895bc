// Creating assets: NFTs (minted straight into a wallet the caller controls) and game currencies
// (created empty, then minted into any wallet as transfers from the zero address).
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Asset } from '../../db/entities/Asset.ts';
import { Holding } from '../../db/entities/Holding.ts';
import { Transfer } from '../../db/entities/Transfer.ts';
import type { Orm } from '../../db/orm.ts';
import { databaseKindOf } from '../../db/platform.ts';
import { readStatements } from '../../db/read-statements.ts';
import { nextSequenceValue } from '../../db/sequences.ts';
import { UINT256_MAX } from '../../db/types/uint256.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { ASSET_COLUMNS, assetFieldsOf } from './asset-rows.ts';
import { ensurePersonalCollection, requireMintableCollection } from './collections.ts';
import type { Holdings, LockedHolding } from './holdings.ts';
import type { Idempotency, StoredResponse, WriteResult } from './idempotency.ts';
import { recordNewNft, recordNewTransfer } from './outbox.ts';
import {
  type AssetMetadataView,
  type AssetView,
  assetView,
  type TransferView,
  transferView,
} from './views.ts';
import type { WalletService } from './wallets.ts';

export interface CreateNftInput {
  name: string;
  description?: string;
  metadata: AssetMetadataView;
  /** A collection the caller owns; defaults to the caller's personal collection. */
  collection?: string;
  /** Owner; defaults to the caller's custodial wallet. */
  to?: StoredAddress;
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
}

class AssetExistsError extends ConflictError {
  constructor(id: string) {
    super(`An asset with id ${id} already exists.`, '/problems/asset-exists', 'Asset already exists');
  }
}

class MaxSupplyExceededError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/max-supply-exceeded', 'Max supply exceeded');
  }
}

export function assetNotFound(id: string): NotFoundError {
  return new NotFoundError(`No asset with id ${id}.`);
}

export function createAssetService(
  orm: Orm,
  wallets: WalletService,
  idempotency: Idempotency,
  balances: Holdings,
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
      return idempotency.run(
        { userId: actor.userId, operation: 'createNft', key: idempotencyKey, request: input },
        async (em) => {
          const owner = input.to ?? (await wallets.controlledAddresses(em, actor.userId))[0];
          if (!owner)
            throw new ForbiddenError(
              'You have no custodial wallet to mint into; name one with `to`.',
              '/problems/wallet-not-controlled',
              'Wallet not controlled',
            );
          await wallets.assertControls(em, actor.userId, owner);
          let collection = input.collection;
          if (collection === undefined) collection = await ensurePersonalCollection(em, actor);
          else await requireMintableCollection(em, actor, collection);
          const now = new Date();
          const asset = em.create(Asset, {
            id: newId('nft'),
            seq: await nextSequenceValue(em, 'asset'),
            kind: 'nft',
            name: input.name,
            description: input.description ?? null,
            metadata: input.metadata as unknown as Record<string, unknown>,
            collection,
            creator: actor.userId,
            symbol: null,
            decimals: null,
            totalSupply: null,
            maxSupply: null,
            owner,
            createdAt: now,
          });
          em.create(Holding, { wallet: owner, asset, balance: 1n, updatedAt: now });
          await em.flush();
          const view = assetView(asset);
          await recordNewNft(em, view, now);
          return { status: 201, body: view, headers: { Location: `/assets/${asset.id}` } };
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
      try {
        return await idempotency.run(
          { userId: actor.userId, operation: 'createCurrency', key: idempotencyKey, request: input },
          async (em) => {
            await requireMintableCollection(em, actor, input.collection);
            if (await em.count(Asset, { id: input.id })) throw new AssetExistsError(input.id);
            const asset = em.create(Asset, {
              id: input.id,
              seq: await nextSequenceValue(em, 'asset'),
              kind: 'fungible',
              name: input.name,
              description: input.description ?? null,
              metadata: input.metadata as unknown as Record<string, unknown>,
              collection: input.collection,
              creator: actor.userId,
              symbol: input.symbol,
              decimals: input.decimals,
              totalSupply: 0n,
              maxSupply,
              owner: null,
              createdAt: new Date(),
            });
            await em.flush();
            return { status: 201, body: assetView(asset), headers: { Location: `/assets/${asset.id}` } };
          },
        );
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) throw new AssetExistsError(input.id);
        throw error;
      }
    },

    async mint(actor, currencyId, input, idempotencyKey) {
      if (input.to === ZERO_ADDRESS) {
        throw new ValidationError('Supply cannot be minted to the zero address.', [
          { pointer: '/body/to', detail: 'must not be the zero address' },
        ]);
      }
      const currency = await orm.em.fork().findOne(Asset, { id: currencyId, kind: 'fungible' });
      if (!currency) throw new NotFoundError(`No currency with id ${currencyId}.`);
      if (actor.role !== 'admin' && currency.creator.id !== actor.userId) {
        throw new ForbiddenError(`Only the creator of ${currencyId} or an admin may mint it.`);
      }
      const decimals = currency.decimals ?? 0;
      const amount = parseAmount(input.amount, decimals, { pointer: '/body/amount', positive: true });
      return idempotency.run(
        {
          userId: actor.userId,
          operation: 'mintCurrency',
          key: idempotencyKey,
          request: { currencyId, ...input },
        },
        (em) => mintInTransaction(em, balances, actor, currencyId, input.to, amount),
      );
    },
  };
}

/** Locks the currency (its supply is read-modify-write), credits `to`, records the mint and its event. */
async function mintInTransaction(
  em: EntityManager,
  balances: Holdings,
  actor: Actor,
  currencyId: string,
  to: StoredAddress,
  amount: bigint,
): Promise<StoredResponse<TransferView>> {
  // FOR NO KEY UPDATE, not FOR UPDATE: the supply is no key, and FOR UPDATE would also block the
  // foreign-key checks (FOR KEY SHARE) of every transfer, holding and price row inserted for this
  // currency meanwhile. Transfers holding the transfer counter then waited for the mint while the
  // mint waited for their holdings: deadlocks and 15 s lock convoys (found by `npm run chaos`).
  if (databaseKindOf(em.getPlatform()) === 'postgresql') {
    await em.execute('select 1 from asset where id = ? for no key update', [currencyId]);
  }
  const currency = await em.findOneOrFail(Asset, { id: currencyId }, { refresh: true });
  const decimals = currency.decimals ?? 0;
  const supply = (currency.totalSupply as bigint) + amount;
  // An uncapped supply still ends at the column's 2^256-1 (13.9: past it the write failed, a 500).
  if (currency.maxSupply == null && supply > UINT256_MAX) {
    throw new InvalidAmountError(
      `Minting ${formatAmount(amount, decimals)} ${currencyId} would bring the supply past ${formatAmount(UINT256_MAX, decimals)}, the most the ledger can hold.`,
      '/body/amount',
      'would bring the total supply past 2^256-1 base units',
    );
  }
  if (currency.maxSupply != null && supply > currency.maxSupply) {
    throw new MaxSupplyExceededError(
      `Minting ${formatAmount(amount, decimals)} ${currencyId} would bring the supply to ${formatAmount(supply, decimals)}, past its max supply ${formatAmount(currency.maxSupply, decimals)}.`,
    );
  }
  const now = new Date();
  currency.totalSupply = supply;
  const holdings = await balances.lock(em, currencyId, [to], [to]);
  await balances.credit(em, holdings.get(to) as LockedHolding, amount, now);
  await em.flush(); // the supply, before the transfer counter, which serializes writers until commit
  const transfer = em.create(Transfer, {
    id: newId('tr'),
    seq: await nextSequenceValue(em, 'transfer'),
    asset: currency,
    fromAddress: ZERO_ADDRESS,
    toAddress: to,
    amount,
    status: 'completed',
    failureReason: null,
    requestedBy: actor.userId,
    createdAt: now,
    completedAt: now,
  });
  await em.flush();
  const view = transferView(transfer, decimals);
  await recordNewTransfer(em, view, currency.collection.id, now);
  return { status: 201, body: view, headers: { Location: `/api/v1/transfers/${transfer.id}` } };
}

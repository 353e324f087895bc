// Transfers: atomic moves between wallets. The caller must control `from`; the debit, the credit, the
// transfer row and its event commit together or not at all. A transfer rejected by a rule (amount,
// control, balance) is answered with a problem and leaves no row: every stored transfer completed.
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Asset } from '../../db/entities/Asset.ts';
import { Transfer } from '../../db/entities/Transfer.ts';
import type { Orm } from '../../db/orm.ts';
import { nextSequenceValue } from '../../db/sequences.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import { credit, debit, lockHoldings } from './holdings.ts';
import type { Idempotency, StoredResponse, WriteResult } from './idempotency.ts';
import { recordNewTransfer } from './outbox.ts';
import { decimalsOf, type TransferView, transferView } from './views.ts';
import type { WalletService } from './wallets.ts';

export interface TransferInput {
  assetId: string;
  from: StoredAddress;
  to: StoredAddress;
  amount: string;
}

export interface TransferFilters {
  wallet?: StoredAddress;
  assetId?: string;
  limit: number;
  cursor?: string;
}

export interface TransferService {
  create(actor: Actor, input: TransferInput, idempotencyKey?: string): Promise<WriteResult<TransferView>>;
  get(id: string): Promise<TransferView>;
  list(filters: TransferFilters): Promise<Page<TransferView>>;
}

class InsufficientBalanceError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/insufficient-balance', 'Insufficient balance');
  }
}

/** Rules that need no database: distinct wallets, no burning to the zero address. */
function checkEndpoints(input: TransferInput): void {
  if (input.to === ZERO_ADDRESS) {
    throw new ValidationError('Assets cannot be sent to the zero address.', [
      { pointer: '/body/to', detail: 'must not be the zero address' },
    ]);
  }
  if (input.from === input.to) {
    throw new ValidationError('`from` and `to` are the same wallet.', [
      { pointer: '/body/to', detail: 'must differ from `from`' },
    ]);
  }
}

function amountOf(asset: Asset, text: string): bigint {
  if (asset.kind === 'nft') {
    const amount = parseAmount(text, 0, { pointer: '/body/amount', positive: true });
    if (amount !== 1n)
      throw new InvalidAmountError(
        'The amount of an NFT transfer must be 1.',
        '/body/amount',
        'must be 1 for an NFT',
      );
    return amount;
  }
  return parseAmount(text, decimalsOf(asset), { pointer: '/body/amount', positive: true });
}

export function createTransferService(
  orm: Orm,
  wallets: WalletService,
  idempotency: Idempotency,
): TransferService {
  async function apply(
    em: EntityManager,
    actor: Actor,
    input: TransferInput,
  ): Promise<StoredResponse<TransferView>> {
    await wallets.assertControls(em, actor.userId, input.from);
    const asset = await em.findOne(Asset, { id: input.assetId });
    if (!asset) throw assetNotFound(input.assetId);
    const amount = amountOf(asset, input.amount);
    const decimals = decimalsOf(asset);

    const holdings = await lockHoldings(em, asset.id, [input.from, input.to], [input.to]);
    const source = holdings.get(input.from);
    const held = (source?.balance as bigint | undefined) ?? 0n;
    if (!source || held < amount) {
      throw new InsufficientBalanceError(
        asset.kind === 'nft'
          ? `${formatAddress(input.from)} does not own ${asset.id}.`
          : `${formatAddress(input.from)} holds ${formatAmount(held, decimals)} ${asset.id}, less than ${formatAmount(amount, decimals)}.`,
      );
    }
    const now = new Date();
    debit(source, amount, now);
    credit(holdings.get(input.to) as NonNullable<typeof source>, amount, now);
    // Written explicitly: `asset` was read before the locks, and a concurrent transfer may have moved
    // the NFT away and back since, so the ORM's change detection against that snapshot can't be trusted.
    if (asset.kind === 'nft') await em.nativeUpdate(Asset, { id: asset.id }, { owner: input.to });

    // The balances are written before the transfer takes its number: on SQLite that number comes
    // from a counter row held to commit (see db/sequences.ts), a stretch kept as short as possible.
    await em.flush();
    const transfer = em.create(Transfer, {
      id: newId('tr'),
      seq: await nextSequenceValue(em, 'transfer'),
      asset,
      fromAddress: input.from,
      toAddress: input.to,
      amount,
      status: 'completed',
      failureReason: null,
      requestedBy: actor.userId,
      createdAt: now,
      completedAt: now,
    });
    await em.flush();
    const view = transferView(transfer, decimals);
    await recordNewTransfer(em, view, asset.collection.id, now);
    return { status: 201, body: view, headers: { Location: `/api/v1/transfers/${transfer.id}` } };
  }

  return {
    async create(actor, input, idempotencyKey) {
      checkEndpoints(input);
      return idempotency.run(
        { userId: actor.userId, operation: 'createTransfer', key: idempotencyKey, request: input },
        (em) => apply(em, actor, input),
      );
    },

    async get(id) {
      const transfer = await orm.em.fork().findOne(Transfer, { id }, { populate: ['asset'] });
      if (!transfer) throw new NotFoundError(`No transfer with id ${id}.`);
      return transferView(transfer, decimalsOf(transfer.asset.getEntity()));
    },

    async list({ wallet, assetId, limit, cursor }) {
      const before = decodeCursor(cursor, 'transfers', isInteger);
      const where: FilterQuery<Transfer>[] = [];
      if (wallet) where.push({ $or: [{ fromAddress: wallet }, { toAddress: wallet }] });
      if (assetId) where.push({ asset: assetId });
      if (before !== undefined) where.push({ seq: { $lt: before } });
      const rows = await orm.em.fork().find(Transfer, where.length ? { $and: where } : {}, {
        populate: ['asset'],
        orderBy: { seq: 'desc' },
        limit: limit + 1,
      });
      const result = page(rows, limit, 'transfers', (row) => row.seq);
      return {
        data: result.data.map((row) => transferView(row, decimalsOf(row.asset.getEntity()))),
        next_cursor: result.next_cursor,
      };
    },
  };
}

// Transfers: atomic moves between wallets. The caller must control `from`; the debit, the credit, the
// transfer row and its event commit together or not at all. A transfer rejected by a rule (amount,
// control, balance) is answered with a problem and leaves no row: every stored transfer completed.
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Transfer } from '../../db/entities/Transfer.ts';
import type { Orm } from '../../db/orm.ts';
import { nextSequenceValue } from '../../db/sequences.ts';
import { Uint256Type } from '../../db/types/uint256.ts';
import { writeStatements } from '../../db/write-statements.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import type { Holdings, LockedHolding } from './holdings.ts';
import type { Idempotency, StoredResponse, WriteResult } from './idempotency.ts';
import { recordNewTransfer } from './outbox.ts';
import { decimalsOf, type TransferView, transferView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';

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

/** More assets than any deployment has; past it the cache starts over (it only saves a read). */
const ASSET_FACTS_LIMIT = 100_000;

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

/** What a transfer needs of its asset; none of it ever changes once the asset exists. */
interface AssetFacts {
  id: string;
  kind: 'nft' | 'fungible';
  decimals: number;
  collectionId: string;
}

function amountOf(asset: AssetFacts, text: string): bigint {
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
  return parseAmount(text, asset.decimals, { pointer: '/body/amount', positive: true });
}

export function createTransferService(
  orm: Orm,
  idempotency: Idempotency,
  balances: Holdings,
): TransferService {
  const statements = writeStatements(orm);
  const amounts = new Uint256Type();
  const platform = orm.em.getPlatform();
  // Kept for the life of the process: an asset's kind, decimals and collection are immutable.
  const assetFacts = new Map<string, AssetFacts>();

  async function factsOf(em: EntityManager, assetId: string): Promise<AssetFacts> {
    let facts = assetFacts.get(assetId);
    if (!facts) {
      const [row] = await statements.all(em, 'select kind, decimals, collection_id from asset where id = ?', [
        assetId,
      ]);
      if (!row) throw assetNotFound(assetId);
      const kind = row.kind as AssetFacts['kind'];
      facts = {
        id: assetId,
        kind,
        decimals: decimalsOf({ kind, decimals: row.decimals as number | null }),
        collectionId: row.collection_id as string,
      };
      if (assetFacts.size >= ASSET_FACTS_LIMIT) assetFacts.clear();
      assetFacts.set(assetId, facts);
    }
    return facts;
  }

  async function apply(
    em: EntityManager,
    actor: Actor,
    input: TransferInput,
  ): Promise<StoredResponse<TransferView>> {
    const [controlled] = await statements.all(
      em,
      'select 1 as yes from wallet where address = ? and user_id = ?',
      [input.from, actor.userId],
    );
    if (!controlled) throw new WalletNotControlledError(input.from);
    const asset = await factsOf(em, input.assetId);
    const amount = amountOf(asset, input.amount);
    const decimals = asset.decimals;

    const holdings = await balances.lock(em, asset.id, [input.from, input.to], [input.to]);
    const source = holdings.get(input.from);
    const held = source?.balance ?? 0n;
    if (!source || held < amount) {
      throw new InsufficientBalanceError(
        asset.kind === 'nft'
          ? `${formatAddress(input.from)} does not own ${asset.id}.`
          : `${formatAddress(input.from)} holds ${formatAmount(held, decimals)} ${asset.id}, less than ${formatAmount(amount, decimals)}.`,
      );
    }
    const now = new Date();
    await balances.debit(em, source, amount, now);
    await balances.credit(em, holdings.get(input.to) as LockedHolding, amount, now);
    if (asset.kind === 'nft')
      await statements.run(em, 'update asset set owner = ? where id = ?', [input.to, asset.id]);

    // The balances are written before the transfer takes its number: on SQLite that number comes
    // from a counter row held to commit (see db/sequences.ts), a stretch kept as short as possible.
    const transfer = {
      id: newId('tr'),
      asset: { id: asset.id },
      fromAddress: input.from,
      toAddress: input.to,
      amount,
      status: 'completed' as const,
      failureReason: null,
      createdAt: now,
      completedAt: now,
    };
    await statements.run(
      em,
      'insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, failure_reason, ' +
        'requested_by_id, created_at, completed_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [
        transfer.id,
        await nextSequenceValue(em, 'transfer'),
        asset.id,
        input.from,
        input.to,
        amounts.convertToDatabaseValue(amount, platform),
        transfer.status,
        null,
        actor.userId,
        now,
        now,
      ],
    );
    const view = transferView(transfer, decimals);
    await recordNewTransfer(em, view, asset.collectionId, now);
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

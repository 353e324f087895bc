// Transfers: atomic moves between wallets. The caller must control `from`; the debit, the credit, the
// transfer row and its event commit together or not at all. A transfer rejected by a rule (amount,
// control, balance) is answered with a problem and leaves no row: every stored transfer completed.
import type { FilterQuery } from '@mikro-orm/core';
import { Transfer } from '../../db/entities/Transfer.ts';
import type { Orm } from '../../db/orm.ts';
import { readStatements } from '../../db/read-statements.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { AssetOnChainError, isChainAssetId } from './chain-assets.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import type { Idempotency, IdempotencyKey, StoredResponse, WriteResult } from './idempotency.ts';
import { newTransferEvent } from './outbox.ts';
import type { LedgerStore } from './store/plan.ts';
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
  store: LedgerStore,
): TransferService {
  const reads = readStatements(orm);
  // Kept for the life of the process: an asset's kind, decimals and collection are immutable.
  const assetFacts = new Map<string, AssetFacts>();

  async function factsOf(assetId: string): Promise<AssetFacts> {
    const known = assetFacts.get(assetId);
    if (known) return known;
    const [row] = await reads.all(ASSET_FACTS, [assetId]);
    if (!row) throw assetNotFound(assetId);
    const kind = row.kind as AssetFacts['kind'];
    const facts: AssetFacts = {
      id: assetId,
      kind,
      decimals: decimalsOf({ kind, decimals: row.decimals == null ? null : Number(row.decimals) }),
      collectionId: row.collection_id as string,
    };
    if (assetFacts.size >= ASSET_FACTS_LIMIT) assetFacts.clear();
    assetFacts.set(assetId, facts);
    return facts;
  }

  function insufficient(asset: AssetFacts, input: TransferInput, held: bigint, amount: bigint) {
    return new InsufficientBalanceError(
      asset.kind === 'nft'
        ? `${formatAddress(input.from)} does not own ${asset.id}.`
        : `${formatAddress(input.from)} holds ${formatAmount(held, asset.decimals)} ${asset.id}, less than ${formatAmount(amount, asset.decimals)}.`,
    );
  }

  /** The transfer as stored and answered; everything in it is known before anything is written. */
  function answerOf(asset: AssetFacts, input: TransferInput, amount: bigint, now: Date) {
    const id = newId('tr');
    const view = transferView(
      {
        id,
        asset: { id: asset.id },
        fromAddress: input.from,
        toAddress: input.to,
        amount,
        status: 'completed',
        failureReason: null,
        createdAt: now,
        completedAt: now,
      },
      asset.decimals,
    );
    const response: StoredResponse<TransferView> = {
      status: 201,
      body: view,
      headers: { Location: `/api/v1/transfers/${id}` },
    };
    return { id, view, response, event: newTransferEvent(view, asset.collectionId, now) };
  }

  /**
   * Rules checked before the plan (asset, amount) must not hide the answers that come first: a
   * stored answer for the key, then the control of `from` (403). Runs only when one of them failed.
   */
  async function earlierAnswer(actor: Actor, input: TransferInput, key: IdempotencyKey | undefined) {
    if (key) {
      const record = await idempotency.find(key);
      if (record) return idempotency.replay<TransferView>(record, key);
    }
    const [controlled] = await reads.all(CONTROLLED, [input.from, actor.userId]);
    if (!controlled) throw new WalletNotControlledError(input.from);
    return undefined;
  }

  return {
    async create(actor, input, idempotencyKey) {
      checkEndpoints(input);
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTransfer',
        key: idempotencyKey,
        request: input,
      });
      let asset: AssetFacts;
      let amount: bigint;
      try {
        asset = await factsOf(input.assetId);
        if (isChainAssetId(asset.id)) throw new AssetOnChainError(asset.id);
        amount = amountOf(asset, input.amount);
      } catch (error) {
        const earlier = await earlierAnswer(actor, input, key);
        if (earlier) return earlier;
        throw error;
      }
      const at = new Date();
      const answer = answerOf(asset, input, amount, at);
      const outcome = await store.apply({
        at,
        idempotency: key && { key, response: answer.response },
        guards: [
          { kind: 'controls', userId: actor.userId, wallet: input.from },
          { kind: 'holds', assetId: asset.id, wallet: input.from, atLeast: amount },
        ],
        balances: [
          { assetId: asset.id, wallet: input.from, delta: -amount },
          { assetId: asset.id, wallet: input.to, delta: amount },
        ],
        owners: asset.kind === 'nft' ? [{ assetId: asset.id, owner: input.to }] : undefined,
        transfers: [
          {
            id: answer.id,
            assetId: asset.id,
            from: input.from,
            to: input.to,
            amount,
            requestedBy: actor.userId,
            createdAt: at,
          },
        ],
        events: [answer.event],
      });
      switch (outcome.outcome) {
        case 'applied':
          return { ...answer.response, replayed: false };
        case 'replay':
          return idempotency.replay<TransferView>(outcome.record, key as IdempotencyKey);
        case 'rejected':
          if (outcome.guard.kind === 'controls') throw new WalletNotControlledError(input.from);
          throw insufficient(asset, input, outcome.found ?? 0n, amount);
      }
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

const CONTROLLED = 'select 1 as yes from wallet where address = ? and user_id = ?';
const ASSET_FACTS = 'select kind, decimals, collection_id from asset where id = ?';

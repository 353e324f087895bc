// Transfers: atomic moves between wallets. The caller must control `from`; the debit, the credit, the
// transfer row and its event commit together or not at all. A transfer rejected by a rule (amount,
// control, balance) is answered with a problem and leaves no row: every stored transfer completed.
import type { FilterQuery } from '@mikro-orm/core';
import { Transfer } from '../../db/entities/Transfer.ts';
import type { Orm } from '../../db/orm.ts';
import { databaseKindOf } from '../../db/platform.ts';
import { type ReadStatements, type Row, readStatements } from '../../db/read-statements.ts';
import { sqliteSequence } from '../../db/sequences.ts';
import { Uint256Type } from '../../db/types/uint256.ts';
import { pgStatements, sqliteWriter } from '../../db/write-statements.ts';
import type { Change } from '../../events/change-keys.ts';
import { commitHookOf } from '../../events/commit-hook.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { assetNotFound } from './assets.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import { type Holdings, sqliteTransferHoldings } from './holdings.ts';
import {
  type Idempotency,
  type IdempotencyKey,
  type StoredResponse,
  sqliteRecords,
  type WriteResult,
} from './idempotency.ts';
import { newTransferEvent, OUTBOX_WRITER_LOCK_KEY, sqliteOutbox } from './outbox.ts';
import { isTransient } from './transactions.ts';
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
  _balances: Holdings,
): TransferService {
  const platform = orm.em.getPlatform();
  const reads = readStatements(orm);
  // Kept for the life of the process: an asset's kind, decimals and collection are immutable.
  const assetFacts = new Map<string, AssetFacts>();

  function remember(assetId: string, row: Row): AssetFacts {
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

  const create =
    databaseKindOf(platform) === 'postgresql'
      ? postgresTransfers(orm, idempotency, reads, assetFacts, remember, insufficient, answerOf)
      : sqliteTransfers(orm, idempotency, assetFacts, remember, insufficient, answerOf);

  return {
    async create(actor, input, idempotencyKey) {
      checkEndpoints(input);
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTransfer',
        key: idempotencyKey,
        request: input,
      });
      return create(actor, input, key);
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

type CreateTransfer = (
  actor: Actor,
  input: TransferInput,
  key: IdempotencyKey | undefined,
) => Promise<WriteResult<TransferView>>;
type Remember = (assetId: string, row: Row) => AssetFacts;
type Insufficient = (asset: AssetFacts, input: TransferInput, held: bigint, amount: bigint) => Error;
type AnswerOf = (
  asset: AssetFacts,
  input: TransferInput,
  amount: bigint,
  now: Date,
) => {
  id: string;
  view: TransferView;
  response: StoredResponse<TransferView>;
  event: ReturnType<typeof newTransferEvent>;
};

const CONTROLLED = 'select 1 as yes from wallet where address = ? and user_id = ?';
const ASSET_FACTS = 'select kind, decimals, collection_id from asset where id = ?';

/**
 * SQLite: the whole transfer is one synchronous transaction on the ORM's connection (SqliteWriter):
 * the idempotency record, the control check, both balances, the transfer row, its counter and its
 * event, about ten prepared statements with no `await` between BEGIN and COMMIT.
 */
function sqliteTransfers(
  orm: Orm,
  idempotency: Idempotency,
  assetFacts: Map<string, AssetFacts>,
  remember: Remember,
  insufficient: Insufficient,
  answerOf: AnswerOf,
): CreateTransfer {
  const platform = orm.em.getPlatform();
  const amounts = new Uint256Type();
  const hook = commitHookOf(orm);
  const prepared = sqliteWriter<Change>(orm, (changes) => hook.committed(changes)).then((writer) => ({
    writer,
    records: sqliteRecords(writer),
    holdings: sqliteTransferHoldings(writer, orm),
    sequence: sqliteSequence(writer),
    outbox: sqliteOutbox(writer),
    controlled: writer.statement(CONTROLLED),
    facts: writer.statement(ASSET_FACTS),
    setOwner: writer.statement('update asset set owner = ? where id = ?'),
    insert: writer.statement(
      'insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, failure_reason, ' +
        'requested_by_id, created_at, completed_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
  }));
  // Until the first call has the connection, calls wait for it; the rest of the work is synchronous.
  return async (actor, input, key) => {
    const s = await prepared;
    return s.writer.transaction((): WriteResult<TransferView> => {
      const now = new Date();
      if (key) {
        const record = s.records.find(key, now);
        if (record) return idempotency.replay<TransferView>(record, key);
      }
      if (!s.controlled.get(input.from, actor.userId)) throw new WalletNotControlledError(input.from);
      let asset = assetFacts.get(input.assetId);
      if (!asset) {
        const row = s.facts.get(input.assetId);
        if (!row) throw assetNotFound(input.assetId);
        asset = remember(input.assetId, row);
      }
      const amount = amountOf(asset, input.amount);
      const held = s.holdings.read(asset.id, input.from, input.to);
      if (held.from === undefined || held.from < amount)
        throw insufficient(asset, input, held.from ?? 0n, amount);
      s.holdings.write(asset.id, input.from, held.from - amount, now);
      s.holdings.write(asset.id, input.to, (held.to ?? 0n) + amount, now);
      if (asset.kind === 'nft') s.setOwner.run(input.to, asset.id);
      const answer = answerOf(asset, input, amount, now);
      s.insert.run(
        answer.id,
        s.sequence('transfer'),
        asset.id,
        input.from,
        input.to,
        amounts.convertToDatabaseValue(amount, platform),
        'completed',
        null,
        actor.userId,
        now.getTime(),
        now.getTime(),
      );
      s.outbox(answer.event);
      if (key) s.records.insert(key, answer.response, now);
      return { ...answer.response, replayed: false };
    });
  };
}

const APPLY_TRANSFER =
  'select gats_apply_transfer($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) as existing';
const PG_ATTEMPTS = 5;

/**
 * PostgreSQL: the whole transfer is one call of the database function `gats_apply_transfer`
 * (migration Migration20261122043000_apply_transfer_function), one round trip in its own transaction:
 * the idempotency record with its answer first (a concurrent same-key request waits on it), the
 * control check, both holdings locked in address order, the balance check, the writes, the transfer
 * row with its `transfer_seq` number, the outbox writer lock and the event. Everything the rows hold
 * (ids, amounts, the view, the event) is computed here first; the function raises GT403 / GT409 for
 * the rules it checks, rolling everything back.
 */
function postgresTransfers(
  orm: Orm,
  idempotency: Idempotency,
  reads: ReadStatements,
  assetFacts: Map<string, AssetFacts>,
  remember: Remember,
  insufficient: Insufficient,
  answerOf: AnswerOf,
): CreateTransfer {
  const statements = pgStatements(orm);
  const hook = commitHookOf(orm);

  /**
   * Rules checked before the call (asset, amount) must not hide the answers that come first: a
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

  return async (actor, input, key) => {
    let asset = assetFacts.get(input.assetId);
    let amount: bigint;
    try {
      if (!asset) {
        const [row] = await reads.all(ASSET_FACTS, [input.assetId]);
        if (!row) throw assetNotFound(input.assetId);
        asset = remember(input.assetId, row);
      }
      amount = amountOf(asset, input.amount);
    } catch (error) {
      const earlier = await earlierAnswer(actor, input, key);
      if (earlier) return earlier;
      throw error;
    }
    for (let attempt = 1; ; attempt++) {
      const now = new Date();
      const answer = answerOf(asset, input, amount, now);
      const body = JSON.stringify(answer.response.body);
      try {
        const [row] = await statements.all('apply_transfer', APPLY_TRANSFER, [
          key?.id ?? null,
          key?.requestHash ?? null,
          key?.expiresAt(now) ?? null,
          body,
          JSON.stringify(answer.response.headers),
          actor.userId,
          asset.id,
          asset.kind === 'nft',
          input.from,
          input.to,
          amount.toString(),
          answer.id,
          now,
          body,
          asset.collectionId,
          answer.event.fromWallet,
          answer.event.toWallet,
          OUTBOX_WRITER_LOCK_KEY,
        ]);
        if (row.existing != null && key) return idempotency.replay<TransferView>(row.existing as Row, key);
        hook.committed([answer.event]);
        return { ...answer.response, replayed: false };
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === 'GT403') throw new WalletNotControlledError(input.from);
        if (code === 'GT409') {
          const held = BigInt((error as { detail?: string }).detail ?? '0');
          throw insufficient(asset, input, held, amount);
        }
        // A lost deadlock or a concurrent replacement of an expired record: nothing was written.
        if (attempt >= PG_ATTEMPTS || !(isTransient(error) || code === '23505')) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
      }
    }
  };
}

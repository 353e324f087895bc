// Confirmed chain transfers into the ledger (issue 20), through the ledger store and its commit hook.
//
// Crash safety: the chain tables commit in their own transactions (src/chain/apply.ts), the ledger
// in the store's. Each contract has a cursor, chain_contract.projected_block: every confirmed
// transfer of the contract up to that block is in the ledger. A batch (the confirmed transfers of
// whole blocks after the cursor, at most BATCH rows unless one block has more) is one plan whose
// idempotency key names the contract and the cursor it starts at, and whose stored answer is the
// batch's last block. Then the cursor moves (and the record is deleted) in a transaction that checks
// the lease. A crash between the two leaves the cursor where it was: the next run builds the same
// key, the store answers `replay` with the stored last block, and only the cursor moves. Nothing is
// applied twice, nothing is skipped.
//
// chain_asset rows (asset id -> contract, token, CAIP-19) are written before the plan that creates
// their assets, so an asset is never visible without its `source`.
import { createHash } from 'node:crypto';
import { ChainAsset, ChainContract, ChainTransfer } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import type { ReadStatements } from '../db/read-statements.ts';
import { answerOf } from '../db/stored-answer.ts';
import { inTransaction } from '../db/transactions.ts';
import { amountOf } from '../domain/ledger/asset-rows.ts';
import { chainAssetId } from '../domain/ledger/chain-assets.ts';
import {
  balanceKey,
  type ChainMovement,
  caip19Of,
  chainAsset,
  netDeltas,
  projectionPlan,
} from '../domain/ledger/chain-projection.ts';
import type { LedgerDatabase } from '../domain/ledger/store/index.ts';
import type { IdempotencyKey } from '../domain/ledger/store/plan.ts';
import { holdLease, LeaseLost } from './apply.ts';
import { movementOf, tokenContract } from './rows.ts';
import { isDataError, reasonOf, suspendContract } from './suspension.ts';

/** Rows per plan (whole blocks: a block with more is one plan). */
export const PROJECTION_BATCH = 2000;
/** The projection's records never expire on their own: the cursor move deletes them. */
const RECORD_LIFETIME_MS = 100 * 365 * 24 * 3600 * 1000;

export interface ProjectionOptions {
  chainId: number;
  holder: string;
  /** The image of an on-chain token until its metadata is fetched. */
  image: string;
  batch?: number;
}

function keyOf(contract: ChainContract, cursor: number): IdempotencyKey {
  const id = `chain-projection:${contract.chainId}:${contract.address}:${cursor}`;
  return {
    id,
    requestHash: createHash('sha256').update(id).digest('base64url'),
    expiresAt: (now) => new Date(now.getTime() + RECORD_LIFETIME_MS),
  };
}

/**
 * Writes the chain_asset rows that are missing (idempotent: an existing row, perhaps written by the
 * metadata fetcher meanwhile, is kept; no lease needed, a token's row never changes its token) and
 * answers the metadata already fetched, by asset id.
 */
async function ensureChainAssets(
  orm: Orm,
  contract: ChainContract,
  rows: { assetId: string; tokenId: string; caip19: string }[],
): Promise<Map<string, Record<string, unknown>>> {
  const fetched = new Map<string, Record<string, unknown>>();
  if (rows.length === 0) return fetched;
  const em = orm.em.fork();
  const known = new Set<string>();
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500).map((row) => row.assetId);
    for (const row of await em.find(ChainAsset, { assetId: { $in: chunk } })) {
      known.add(row.assetId);
      if (row.metadata) fetched.set(row.assetId, row.metadata);
    }
  }
  const missing = rows.filter((row) => !known.has(row.assetId));
  if (missing.length === 0) return fetched;
  await em
    .createQueryBuilder(ChainAsset)
    .insert(missing.map((row) => ({ ...row, contract: contract.id })))
    .onConflict('assetId')
    .ignore()
    .execute();
  return fetched;
}

/**
 * Creates an ERC-20's ledger asset (at registration): the chain_asset row, then the asset through
 * the store (guarded by `assetAbsent`, so a second call changes nothing).
 */
export async function createErc20Asset(
  { orm, store }: LedgerDatabase,
  contract: ChainContract,
  image: string,
): Promise<void> {
  const token = tokenContract(contract);
  const asset = chainAsset(token, '', { image, owner: null, at: new Date() });
  await ensureChainAssets(orm, contract, [{ assetId: asset.id, tokenId: '', caip19: asset.caip19 }]);
  const { caip19: _, ...row } = asset;
  await store.apply({
    at: row.createdAt,
    guards: [{ kind: 'assetAbsent', assetId: row.id }],
    assets: [row],
  });
}

/**
 * The ledger's current balances of the (asset, wallet) keys a batch changes, and the supplies of its
 * existing assets: the plan clamps debits at zero and bounds every sum by 2^256 - 1 with them.
 */
async function currentSums(
  reads: ReadStatements,
  deltas: Map<string, bigint>,
  existingAssets: ReadonlySet<string>,
): Promise<{ balances: Map<string, bigint>; supplies: Map<string, bigint> }> {
  const balances = new Map<string, bigint>();
  const keys = [...deltas.keys()].map((key) => key.split('\u0000') as [string, string]);
  for (let i = 0; i < keys.length; i += 250) {
    const chunk = keys.slice(i, i + 250);
    const rows = await reads.all(
      `select asset_id, wallet, balance from holding where ${chunk.map(() => '(asset_id = ? and wallet = ?)').join(' or ')}`,
      chunk.flat(),
    );
    for (const row of rows)
      balances.set(balanceKey(row.asset_id as string, row.wallet as string), amountOf(row.balance));
  }
  const supplies = new Map<string, bigint>();
  const ids = [...existingAssets];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = await reads.all(
      `select asset_id, total_supply from asset_supply where asset_id in (${chunk.map(() => '?').join(',')})`,
      chunk,
    );
    for (const row of rows) supplies.set(row.asset_id as string, amountOf(row.total_supply));
  }
  return { balances, supplies };
}

/**
 * Projects one batch of `contract`'s confirmed transfers after its cursor. Answers how many
 * transfers the batch held (0: nothing to do).
 */
async function projectBatch(
  { orm, reads, store }: LedgerDatabase,
  contract: ChainContract,
  options: ProjectionOptions,
): Promise<number> {
  const batch = options.batch ?? PROJECTION_BATCH;
  const cursor = contract.projectedBlock ?? contract.fromBlock - 1;
  const em = orm.em.fork();
  const where = { contract: contract.id, status: 'confirmed' as const, blockNumber: { $gt: cursor } };
  // The batch ends with the block of its `batch`-th row (whole blocks only).
  const [nth] = await em.find(ChainTransfer, where, {
    orderBy: { blockNumber: 'asc', logIndex: 'asc', batchIndex: 'asc' },
    offset: batch - 1,
    limit: 1,
    fields: ['blockNumber'],
  });
  const rows = await em.find(
    ChainTransfer,
    nth ? { ...where, blockNumber: { $gt: cursor, $lte: nth.blockNumber } } : where,
    { orderBy: { blockNumber: 'asc', logIndex: 'asc', batchIndex: 'asc' } },
  );
  if (rows.length === 0) return 0;
  const upTo = (rows[rows.length - 1] as ChainTransfer).blockNumber;
  const token = tokenContract(contract);
  const movements: ChainMovement[] = rows.map(movementOf);

  // The contract's tokens in this batch: their chain_asset rows first, then which assets exist.
  const tokens = new Map<string, { assetId: string; tokenId: string; caip19: string }>();
  for (const movement of movements) {
    if (tokens.has(movement.tokenId)) continue;
    const caip19 = caip19Of(token, movement.tokenId);
    tokens.set(movement.tokenId, { assetId: chainAssetId(caip19), tokenId: movement.tokenId, caip19 });
  }
  const fetched = await ensureChainAssets(orm, contract, [...tokens.values()]);
  const ids = [...tokens.values()].map((token) => token.assetId);
  const existingAssets = new Set<string>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const found = await reads.all(
      `select id from asset where id in (${chunk.map(() => '?').join(',')})`,
      chunk,
    );
    for (const row of found) existingAssets.add(row.id as string);
  }
  const { balances, supplies } = await currentSums(reads, netDeltas(token, movements), existingAssets);
  const key = keyOf(contract, cursor);
  const { plan } = projectionPlan({
    contract: token,
    movements,
    existingAssets,
    fetched,
    balances,
    supplies,
    key,
    upTo,
    image: options.image,
    at: new Date(),
  });
  const outcome = await store.apply(plan);
  let projectedTo = upTo;
  if (outcome.outcome === 'replay') {
    // Applied before a crash: move the cursor to where that batch ended.
    const body = answerOf(outcome.record, reads.json) as { upTo?: number } | null;
    projectedTo = Number(body?.upTo ?? upTo);
  } else if (outcome.outcome === 'rejected') {
    throw new Error(`chain projection rejected by guard ${outcome.guard.kind}`); // no guards: never
  }
  await moveCursor(orm, contract, options, cursor, projectedTo, key.id);
  return rows.length;
}

async function moveCursor(
  orm: Orm,
  contract: ChainContract,
  options: ProjectionOptions,
  from: number,
  to: number,
  recordId: string,
): Promise<void> {
  await inTransaction(orm, async (em) => {
    await holdLease(em, options.chainId, options.holder);
    const moved = await em.nativeUpdate(
      ChainContract,
      {
        id: contract.id,
        ...(contract.projectedBlock == null ? { projectedBlock: null } : { projectedBlock: from }),
      },
      { projectedBlock: to },
    );
    if (moved === 0) throw new LeaseLost(`chain ${options.chainId}: the projection cursor moved under us`);
    await em
      .getConnection()
      .execute('delete from idempotency_record where id = ?', [recordId], 'run', em.getTransactionContext());
  });
  contract.projectedBlock = to;
}

/**
 * Projects the chain's confirmed transfers into the ledger, at most `maxBatches` batches per active
 * contract. A data error of one contract's batch (a sum past 2^256 - 1) suspends that contract and
 * the others go on (security issue 30.1). Answers the number of transfers projected, whether some
 * are left, and the contracts suspended.
 */
export async function projectConfirmed(
  database: LedgerDatabase,
  options: ProjectionOptions & { maxBatches?: number },
): Promise<{ projected: number; more: boolean; suspended: { contract: ChainContract; reason: string }[] }> {
  const { orm } = database;
  const contracts = await orm.em
    .fork()
    .find(ChainContract, { chainId: options.chainId, status: 'active' }, { orderBy: { id: 'asc' } });
  let projected = 0;
  let more = false;
  const suspended: { contract: ChainContract; reason: string }[] = [];
  for (const contract of contracts) {
    try {
      for (let i = 0; i < (options.maxBatches ?? 4); i++) {
        const count = await projectBatch(database, contract, options);
        projected += count;
        if (count === 0) break;
        if (i === (options.maxBatches ?? 4) - 1) more = true;
      }
    } catch (error) {
      if (!isDataError(error)) throw error;
      const reason = `projection: ${reasonOf(error)}`;
      if (await suspendContract(orm, contract.id, reason)) suspended.push({ contract, reason });
    }
  }
  return { projected, more, suspended };
}

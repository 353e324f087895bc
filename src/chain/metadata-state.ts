// The metadata fetcher's persisted state (finding 30.8): a token's fetch lives in its chain_asset row
// (`metadata_status`, `metadata_attempts`, `metadata_retry_at`), not only in memory, so nothing is
// dropped: a token is written `pending` before it is queued; a fetcher holds the tokens it queued by
// a claim (`metadata_retry_at` in the future); what a full queue, a stop or a crash leaves behind
// is due again and a sweep (of any instance) claims it; a failure that may pass is retried later
// with a growing delay, up to MAX_ATTEMPTS fetches.
import { getAddress } from 'viem/utils';
import { ChainAsset, ChainContract } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { chainAssetId } from '../domain/ledger/chain-assets.ts';
import { caip19Of } from '../domain/ledger/chain-projection.ts';

/** A token to fetch the metadata of; `attempts`: fetches already tried. */
export interface MetadataJob {
  contractId: number;
  tokenId: string;
  assetId: string;
  attempts: number;
}

/** Fetches tried before a failure that may pass becomes final. */
export const MAX_ATTEMPTS = 6;
/** How long a fetcher holds the tokens it queued before another may take them. */
export const CLAIM_MS = 2 * 60_000;

/** A token's key in the fetcher's memory. */
export const jobKey = (job: { contractId: number; tokenId: string }) => `${job.contractId}|${job.tokenId}`;

function rowOf(contract: ChainContract, tokenId: string) {
  const address = getAddress(contract.address);
  const caip19 = caip19Of({ chainId: contract.chainId, address, standard: contract.standard }, tokenId);
  return { assetId: chainAssetId(caip19), contract: contract.id, tokenId, caip19 };
}

/**
 * Writes the tokens `pending` (their rows created when missing; a row already fetched, failed or
 * pending is left alone) and answers those it made pending. `claimUntil`: the caller queues them
 * (held until then); null: left due for a sweep.
 */
export async function markPending(
  orm: Orm,
  tokens: { contractId: number; tokenId: string }[],
  claimUntil: Date | null,
): Promise<MetadataJob[]> {
  if (tokens.length === 0) return [];
  const em = orm.em.fork();
  const ids = [...new Set(tokens.map((token) => token.contractId))];
  const contracts = new Map(
    (await em.find(ChainContract, { id: { $in: ids }, standard: { $ne: 'erc20' } })).map(
      (contract) => [Number(contract.id), contract] as const,
    ),
  );
  const rows = tokens.flatMap((token) => {
    const contract = contracts.get(token.contractId);
    return contract ? [{ ...rowOf(contract, token.tokenId), token }] : [];
  });
  const assetIds = rows.map((row) => row.assetId);
  const existing = new Map(
    (
      await em.find(ChainAsset, { assetId: { $in: assetIds } }, { fields: ['assetId', 'metadataStatus'] })
    ).map((row) => [row.assetId, row.metadataStatus ?? null] as const),
  );
  const fresh = rows.filter((row) => !existing.has(row.assetId) || existing.get(row.assetId) === null);
  if (fresh.length === 0) return [];
  await em
    .createQueryBuilder(ChainAsset)
    .insert(
      fresh.map(({ token: _, ...row }) => ({
        ...row,
        metadataStatus: 'pending',
        metadataRetryAt: claimUntil,
      })),
    )
    .onConflict('assetId')
    .ignore()
    .execute();
  // A row the projection wrote meanwhile (or before) without a status.
  await em.nativeUpdate(
    ChainAsset,
    { assetId: { $in: fresh.map((row) => row.assetId) }, metadataStatus: null },
    { metadataStatus: 'pending', metadataRetryAt: claimUntil },
  );
  return fresh.map((row) => ({
    contractId: row.token.contractId,
    tokenId: row.token.tokenId,
    assetId: row.assetId,
    attempts: 0,
  }));
}

/**
 * Claims up to `limit` due tokens of chain `chainId` (never queued, pending and unclaimed, or failed
 * and due again), a fair share per contract, skipping `held` (`contractId|tokenId`). A claim is a
 * conditional update, so two instances never claim one token.
 */
export async function claimDue(
  orm: Orm,
  chainId: number,
  limit: number,
  held: ReadonlySet<string>,
  now = new Date(),
): Promise<MetadataJob[]> {
  if (limit <= 0) return [];
  const em = orm.em.fork();
  const due = {
    // A suspended or unregistered contract's tokens wait (resumed, its tokens are due again).
    contract: { chainId, standard: { $ne: 'erc20' as const }, status: 'active' as const },
    $or: [
      { metadataStatus: null },
      { metadataStatus: 'pending', metadataRetryAt: null },
      { metadataStatus: { $in: ['pending', 'failed'] }, metadataRetryAt: { $lte: now } },
    ],
  };
  // Up to 1000 due tokens, the least tried first, then taken round robin per contract (a fair share).
  const rows = await em.find(ChainAsset, due, {
    orderBy: { metadataAttempts: 'asc', assetId: 'asc' },
    limit: 1000,
  });
  const byContract = new Map<number, ChainAsset[]>();
  for (const row of rows) {
    if (held.has(jobKey({ contractId: Number(row.contract.id), tokenId: row.tokenId }))) continue;
    const list = byContract.get(Number(row.contract.id)) ?? [];
    list.push(row);
    byContract.set(Number(row.contract.id), list);
  }
  const claimUntil = new Date(now.getTime() + CLAIM_MS);
  const jobs: MetadataJob[] = [];
  for (
    let round = 0;
    jobs.length < limit && [...byContract.values()].some((list) => list.length > round);
    round++
  ) {
    for (const [contractId, list] of byContract) {
      const row = list[round];
      if (!row || jobs.length >= limit) continue;
      const claimed = await em.nativeUpdate(
        ChainAsset,
        {
          assetId: row.assetId,
          metadataStatus: row.metadataStatus ?? null,
          metadataRetryAt: row.metadataRetryAt ?? null,
        },
        { metadataStatus: row.metadataStatus ?? 'pending', metadataRetryAt: claimUntil },
      );
      if (claimed === 1)
        jobs.push({ contractId, tokenId: row.tokenId, assetId: row.assetId, attempts: row.metadataAttempts });
    }
  }
  return jobs;
}

/** The outcome of one token's fetch (or of its deferral). */
export type MetadataOutcome =
  | { kind: 'fetched'; metadata: Record<string, unknown> }
  | { kind: 'failed'; error: string; retryable: boolean }
  | { kind: 'deferred'; error: string; until: Date };

/** The delay before retry `attempts` + 1: 30 s, then 4 times longer each time, at most 6 h. */
export function retryDelayMs(attempts: number, baseMs: number): number {
  return Math.min(baseMs * 4 ** Math.max(0, attempts - 1), 6 * 3600_000);
}

/** Writes a token's outcome into its row; `attempts`: fetches tried including this one. */
export async function recordOutcome(
  orm: Orm,
  assetId: string,
  attempts: number,
  outcome: MetadataOutcome,
  retryBaseMs: number,
): Promise<void> {
  const em = orm.em.fork();
  if (outcome.kind === 'fetched') {
    await em.nativeUpdate(
      ChainAsset,
      { assetId },
      {
        metadata: outcome.metadata,
        metadataStatus: 'fetched',
        metadataError: null,
        metadataAttempts: attempts,
        metadataRetryAt: null,
      },
    );
    return;
  }
  const error = outcome.error.slice(0, 500);
  if (outcome.kind === 'deferred') {
    await em.nativeUpdate(
      ChainAsset,
      { assetId },
      { metadataStatus: 'pending', metadataError: error, metadataRetryAt: outcome.until },
    );
    return;
  }
  const again = outcome.retryable && attempts < MAX_ATTEMPTS;
  await em.nativeUpdate(
    ChainAsset,
    { assetId },
    {
      metadataStatus: 'failed',
      metadataError: error,
      metadataAttempts: attempts,
      metadataRetryAt: again ? new Date(Date.now() + retryDelayMs(attempts, retryBaseMs)) : null,
    },
  );
}

/** Hands queued tokens back (due now), so that a sweep takes them at once. */
export async function release(orm: Orm, assetIds: string[]): Promise<void> {
  if (assetIds.length === 0) return;
  await orm.em
    .fork()
    .nativeUpdate(
      ChainAsset,
      { assetId: { $in: assetIds }, metadataStatus: { $in: ['pending', 'failed'] } },
      { metadataRetryAt: new Date() },
    );
}

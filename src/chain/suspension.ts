// A registered contract's indexing status (security issue 30.1): a failure that belongs to one
// contract (a data error while applying or projecting its logs) suspends that contract with its
// reason, and the chain's other contracts go on; an admin suspends, resumes or unregisters one.
// Node errors (time-outs, refusals, a database away) are not data errors: the indexer pauses the
// chain and retries them with back-off (src/chain/indexer.ts).
import { ConstraintViolationException, DriverException, ValidationError } from '@mikro-orm/core';
import { ChainContract, ChainHolding, ChainTransfer, ChainTransferRemoval } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { inTransaction } from '../db/transactions.ts';
import { type AuditDraft, recordAudit } from '../domain/audit.ts';
import { ChainAmountOverflow } from '../domain/ledger/chain-projection.ts';

/** The longest reason kept (the column's width). */
const REASON_LENGTH = 500;

/**
 * Whether `error` is a data error: the same input fails the same way however often it is retried
 * (a sum past 2^256 - 1, a value a column type refuses, a constraint, PostgreSQL's data exceptions,
 * class 22). A connection, a time-out, a lock or a deadlock is not.
 */
export function isDataError(error: unknown): boolean {
  if (error instanceof ChainAmountOverflow || error instanceof RangeError) return true;
  if (error instanceof ValidationError || error instanceof ConstraintViolationException) return true;
  if (error instanceof DriverException) {
    const sqlState = (error as { sqlState?: string }).sqlState ?? (error as { code?: string }).code ?? '';
    return /^22/.test(sqlState) || /^SQLITE_(MISMATCH|TOOBIG|RANGE)/.test(sqlState);
  }
  return false;
}

/** The first line of an error's message, at most REASON_LENGTH characters. */
export function reasonOf(error: unknown): string {
  const message = (error as Error)?.message ?? String(error);
  return `${(error as Error)?.name ?? 'Error'}: ${message.split('\n')[0]}`.slice(0, REASON_LENGTH);
}

/**
 * Suspends an active contract: the indexer reads and projects it no more until it is resumed.
 * Answers whether it was active (a suspended or unregistered one is left as it is). An admin's
 * suspension is `audited` (with it, in its transaction); the indexer's own is not.
 */
export async function suspendContract(
  orm: Orm,
  contractId: number,
  reason: string,
  audited?: AuditDraft,
): Promise<boolean> {
  return inTransaction(orm, async (em) => {
    const changed = await em.nativeUpdate(
      ChainContract,
      { id: contractId, status: 'active' },
      { status: 'suspended', suspendedReason: reason.slice(0, REASON_LENGTH), suspendedAt: new Date() },
    );
    if (changed > 0 && audited) await recordAudit(em, audited);
    return changed > 0;
  });
}

/** Resumes a suspended contract from where it stopped (its checkpoint and projection cursor are kept). */
export async function resumeContract(orm: Orm, contractId: number, audited?: AuditDraft): Promise<boolean> {
  return inTransaction(orm, async (em) => {
    const changed = await em.nativeUpdate(
      ChainContract,
      { id: contractId, status: 'suspended' },
      { status: 'active', suspendedReason: null, suspendedAt: null },
    );
    if (changed > 0 && audited) await recordAudit(em, audited);
    return changed > 0;
  });
}

/**
 * Unregisters a contract: it is never read again, and its chain rows (transfers, removals to
 * announce, holdings) are deleted, in one transaction. The row stays as a tombstone (`unregistered`):
 * the ledger assets and transfers already projected are history and stay, so registering the
 * address again (which would count them twice) answers 409.
 */
export async function unregisterContract(orm: Orm, contractId: number, audited?: AuditDraft): Promise<void> {
  await inTransaction(orm, async (em) => {
    await em.nativeUpdate(
      ChainContract,
      { id: contractId },
      { status: 'unregistered', suspendedReason: null, suspendedAt: null },
    );
    await em.nativeDelete(ChainTransferRemoval, { contract: contractId });
    await em.nativeDelete(ChainTransfer, { contract: contractId });
    await em.nativeDelete(ChainHolding, { contract: contractId });
    // Last, as every append: the audit tip's lock is the last one a transaction takes.
    if (audited) await recordAudit(em, audited);
  });
}

// How a ledger service hands its decided write to the store and turns the outcome into its answer:
// the answer itself when the plan applied, the stored answer when the key had one, the service's
// problem when a guard failed.
import type { Idempotency, IdempotencyKey, StoredResponse, WriteResult } from './idempotency.ts';
import type { GuardFailure, LedgerStore, Plan } from './store/plan.ts';

export async function applyWrite<T>(
  store: LedgerStore,
  idempotency: Idempotency,
  key: IdempotencyKey | undefined,
  plan: Omit<Plan, 'idempotency'>,
  response: StoredResponse<T>,
  rejected: (failure: GuardFailure) => Error,
): Promise<WriteResult<T>> {
  const outcome = await store.apply({ ...plan, idempotency: key && { key, response } });
  switch (outcome.outcome) {
    case 'applied':
      return { ...response, replayed: false };
    case 'replay':
      return idempotency.replay<T>(outcome.record, key as IdempotencyKey);
    case 'rejected':
      throw rejected(outcome);
  }
}

/**
 * A rule checked before the plan (a read: the collection, the asset) must not hide a stored answer
 * for the key, which comes first: replays it when there is one, else rethrows `error`.
 */
export async function earlierAnswerOr<T>(
  idempotency: Idempotency,
  key: IdempotencyKey | undefined,
  error: unknown,
): Promise<WriteResult<T>> {
  if (key) {
    const record = await idempotency.find(key);
    if (record) return idempotency.replay<T>(record, key);
  }
  throw error;
}

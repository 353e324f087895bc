// What every ledger handler reads from a request the contract already validated: the acting user,
// the Idempotency-Key, the page size; and how a stored write answer goes back on the wire.
import type { Context } from 'koa';
import type { WriteResult } from '../../domain/ledger/idempotency.ts';
import type { Actor } from '../../domain/ledger/index.ts';
import { type AnswerBody, caller, type OperationId, type OperationRequest } from '../handler.ts';

const DEFAULT_LIMIT = 20;

/** What the paging helpers read of a request: its (contract-typed) `limit` and `cursor`. */
interface Paged {
  query: { limit?: number; cursor?: string };
}

export function actorOf(request: OperationRequest): Actor {
  const auth = caller(request);
  return { userId: auth.userId, role: auth.role };
}

export function idempotencyKeyOf(request: OperationRequest): string | undefined {
  const key = request.headers['idempotency-key'];
  return Array.isArray(key) ? key[0] : key;
}

export function limitOf(request: Paged): number {
  return request.query.limit ?? DEFAULT_LIMIT;
}

export function cursorOf(request: Paged): string | undefined {
  return request.query.cursor;
}

/**
 * Sends a created resource (first answer or replay: the same status, body and Location), which
 * must be the body operation `Id` declares for 201.
 */
export function sendStored<Id extends OperationId>(
  ctx: Context,
  _operation: Id,
  response: WriteResult<AnswerBody<Id, 201>>,
): void {
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  if (response.replayed) ctx.set('Idempotent-Replayed', 'true');
  ctx.status = response.status;
  ctx.body = response.body;
}

// The columns of webhook_delivery in the order the fast path's raw inserts write them (./sqlite.ts,
// ./postgres.ts), each with the DeliveryRow property it comes from.
import type { DeliveryRow } from './port.ts';

export const DELIVERY_COLUMNS: readonly (keyof DeliveryRow)[] = [
  'id',
  'subscription',
  'eventId',
  'eventType',
  'status',
  'attempts',
  'firstAttemptAt',
  'nextAttemptAt',
  'lastAttemptAt',
  'lastStatusCode',
  'lastError',
  'deliveredAt',
  'createdAt',
];

export const DELIVERY_COLUMN_NAMES =
  'id, subscription_id, event_id, event_type, status, attempts, first_attempt_at, next_attempt_at, ' +
  'last_attempt_at, last_status_code, last_error, delivered_at, created_at';

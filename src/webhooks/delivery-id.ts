// A delivery's id (`webhook-id`), the same every time it is computed: shared by the dispatcher
// (slow path, rows) and the sender thread (the fast path computes it where it signs).
import { hash as digest } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CODES = Array.from(CROCKFORD, (c) => c.charCodeAt(0));

/** The ULID time part of an event's id (10 characters): the same for every subscription's delivery of it. */
export function deliveryTime(occurredAt: number): string {
  let time = '';
  let t = occurredAt;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time;
}

/**
 * The delivery id of one event to one subscription, the same every time it is computed (so a
 * delivery sent again after a crash, before its row was written, keeps its `webhook-id`): `whd_`
 * and a ULID whose time is the event's and whose 80 "random" bits come from a hash of both ids.
 * `time`: deliveryTime(occurredAt), when the caller has it already.
 */
export function deliveryId(
  subscriptionId: string,
  eventId: number,
  occurredAt: number,
  time = deliveryTime(occurredAt),
): string {
  const hash = digest('sha256', `${subscriptionId}:${eventId}`, 'buffer');
  const tail = String.fromCharCode(
    CODES[hash[0] & 31],
    CODES[hash[1] & 31],
    CODES[hash[2] & 31],
    CODES[hash[3] & 31],
    CODES[hash[4] & 31],
    CODES[hash[5] & 31],
    CODES[hash[6] & 31],
    CODES[hash[7] & 31],
    CODES[hash[8] & 31],
    CODES[hash[9] & 31],
    CODES[hash[10] & 31],
    CODES[hash[11] & 31],
    CODES[hash[12] & 31],
    CODES[hash[13] & 31],
    CODES[hash[14] & 31],
    CODES[hash[15] & 31],
  );
  return `whd_${time}${tail}`;
}

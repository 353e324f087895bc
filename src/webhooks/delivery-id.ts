// A delivery's id (`webhook-id`), the same every time it is computed: shared by the dispatcher
// (slow path, rows) and the sender thread (the fast path computes it where it signs).
import { hash as digest } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * The delivery id of one event to one subscription, the same every time it is computed (so a
 * delivery sent again after a crash, before its row was written, keeps its `webhook-id`): `whd_`
 * and a ULID whose time is the event's and whose 80 "random" bits come from a hash of both ids.
 */
export function deliveryId(subscriptionId: string, eventId: number, occurredAt: number): string {
  let time = '';
  let t = occurredAt;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const hash = digest('sha256', `${subscriptionId}:${eventId}`, 'buffer');
  let tail = '';
  for (let i = 0; i < 16; i++) tail += CROCKFORD[hash[i] % 32];
  return `whd_${time}${tail}`;
}

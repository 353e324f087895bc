import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';

export const LEDGER_CHANGE_KINDS = ['walletLinked'] as const;
export type LedgerChangeKind = (typeof LEDGER_CHANGE_KINDS)[number];

/**
 * Internal, never published: ledger changes that are no event of the AsyncAPI stream but change what
 * cached reads show (a wallet linked to a user changes that user's `GET /api/v1/assets`). Written in
 * the same transaction as the change, under the outbox writers' lock (src/events/outbox-lock.ts), and
 * followed by every instance's relay beside the outbox, to invalidate its cached reads. A table of its
 * own, so the published event ids (outbox_event.id) stay gap-free. Pruned with the events.
 */
export const LedgerChange = defineEntity({
  name: 'LedgerChange',
  properties: {
    id: bigintAutoincrementId(),
    kind: p.enum(LEDGER_CHANGE_KINDS),
    occurredAt: p.datetime(),
    /** The user whose wallets changed (walletLinked). */
    userId: p.string().nullable(),
    /** The lowercase address concerned (walletLinked: the wallet linked). */
    wallet: p.string().length(42).nullable(),
  },
});
export type LedgerChange = InferEntity<typeof LedgerChange>;

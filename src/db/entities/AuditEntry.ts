import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * One entry of the audit trail (issue 37, src/domain/audit.ts): a privileged or sensitive action,
 * written in the same transaction as the action. `body` is the entry as canonical JSON (RFC 8785),
 * exactly the bytes hashed; the other columns copy parts of it for the reads' filters and are
 * checked against it by `npm run audit:verify`. `hash` = SHA-256 of `prev_hash`, `seq` and `body`
 * (see `entryHash`), so each entry is chained to the one before it. Append-only: only retention
 * (`pruneAudit`) removes entries, the oldest first, keeping the pruned tip in `audit_tip`.
 */
export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  properties: {
    /** 1, 2, 3, ... without gaps, drawn under the tip's lock. */
    seq: p.bigint('number').primary().autoincrement(false),
    at: p.datetime().index(),
    action: p.string().index(),
    /** The user or service account that acted; null for a command run on the machine (`npm run admin`). */
    actorId: p.string().nullable().index(),
    objectType: p.string(),
    objectId: p.string(),
    /** The user the object belongs to (a collection's studio, a webhook's or key's owner): who sees it. */
    ownerId: p.string().nullable().index(),
    /** The collection the object is in, when it is in one. */
    collectionId: p.string().nullable(),
    body: p.text(),
    prevHash: p.string().length(64),
    hash: p.string().length(64),
  },
  indexes: [{ properties: ['objectType', 'objectId'] }],
});
export type AuditEntry = InferEntity<typeof AuditEntry>;

/**
 * The audit trail's tip, one row (`id` 1): the last entry's `seq` and `hash`, and the checkpoint of
 * retention (the last pruned entry's `seq` and `hash`). Every append updates this row first, which
 * serializes appends (a row lock on PostgreSQL, the write lock on SQLite): the chain never forks.
 */
export const AuditTip = defineEntity({
  name: 'AuditTip',
  properties: {
    id: p.integer().primary().autoincrement(false),
    seq: p.bigint('number'),
    hash: p.string().length(64),
    prunedSeq: p.bigint('number'),
    prunedHash: p.string().length(64),
  },
});
export type AuditTip = InferEntity<typeof AuditTip>;

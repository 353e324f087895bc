// The audit trail (issue 37): an append-only record of every privileged or sensitive action, each
// entry written in the same transaction as its action and chained to the one before it by a SHA-256
// hash. This file is its one home: the action kinds (`AUDIT_ACTIONS`), who acted (`AuditOrigin`, set
// once per request by the HTTP edge and once per command by `npm run admin`), how an entry is made
// (`auditDraft`), hashed (`entryHash`), appended (`recordAudit` for the ORM's transactions; a ledger
// plan carries its drafts in `Plan.audit` and the ledger store appends them with the same steps),
// verified (`verifyAudit`), pruned (`pruneAudit`) and read (`listAudit` for the audit log,
// `auditEntriesAfter` for `auditRecorded` webhooks, both limited by `auditReadableOwners` in
// ./authorization.ts).
//
// An entry's `body` is its canonical JSON (RFC 8785, `canonicalize`): exactly the text hashed, so a
// verifier needs no knowledge of the columns. Its hash is SHA-256 over `prev_hash + "\n" + seq + "\n"
// + body` (hex), `prev_hash` being the hash of entry `seq - 1` (64 zeros before the first). An append
// first updates the tip row (`audit_tip`), which takes its row lock on PostgreSQL and the write lock
// on SQLite: concurrent appends queue there, and the chain never forks.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import canonicalizeModule from 'canonicalize';
import type { components } from '../../generated/openapi/types.ts';
import { AuditEntry } from '../db/entities/AuditEntry.ts';
import type { Orm } from '../db/orm.ts';
import { inSnapshot, inTransaction } from '../db/transactions.ts';

/**
 * Every action the trail records, with what it means. The object type the entry names is the
 * prefix (`apiKey.created` is about an `apiKey`).
 */
export const AUDIT_ACTIONS = {
  'user.created': 'a user was created by an admin command (npm run admin create-user)',
  'user.roleChanged': "a user's role changed (setUserRole, or npm run admin set-role)",
  'serviceAccount.created': 'a service account was created',
  'serviceAccount.deleted': 'a service account was deleted (its secrets and API keys with it)',
  'clientSecret.created': "a service account's client secret was added (a rotation's first half)",
  'clientSecret.revoked': "a service account's client secret was revoked",
  'application.created': 'an OAuth application was registered (name, type, redirect URIs; never its secret)',
  'application.deleted': 'an OAuth application was deleted (its tokens and API keys stop working with it)',
  'apiKey.created': 'an API key was created',
  'apiKey.revoked': 'an API key was revoked',
  'webhook.created': 'a webhook subscription was created',
  'webhook.updated': 'a webhook subscription was changed (URL, events, filters, paused)',
  'webhook.secretRotated': "a webhook subscription's signing secret was rotated",
  'webhook.deleted': 'a webhook subscription was deleted',
  'currency.created': "a currency was created in a studio's collection",
  'asset.minted': "an NFT or a currency's units were minted into a studio's collection (not a personal one)",
  'asset.burned': "an asset was burned by its collection's studio or an admin (burnPolicy holder_or_studio)",
  'asset.frozen': 'an asset was frozen',
  'asset.unfrozen': 'an asset was unfrozen',
  'asset.metadataChanged': "an asset's name, description or metadata changed (a new metadata version)",
  'collection.created': 'a collection was created, with its policies',
  'collection.marketChanged': "a collection's marketplace settings changed (trading, royalty, currencies)",
  'recipe.created': 'a recipe was created',
  'storeOffer.created': 'a store offer was created',
  'storeOffer.updated': 'a store offer was changed (price, grants, limits, window, status)',
  'claimCode.created': 'a claim code was created (the entry holds neither the code nor its prefix)',
  'claimCode.updated': 'a claim code was changed (grants, limits, window, status)',
  'dropTable.created': 'a drop table was created',
  'lootBox.created': 'a loot box was created',
  'chainContract.registered': 'a chain contract was registered for indexing',
  'chainContract.suspended': 'an admin suspended a chain contract',
  'chainContract.resumed': 'an admin resumed a chain contract',
  'chainContract.unregistered': 'an admin unregistered a chain contract',
  'chainContract.reassigned': 'an admin moved a chain contract to another collection',
} as const;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

/** Who acted: a user, a service account, a command run on the machine, or the service itself. */
export interface AuditActor {
  kind: 'user' | 'serviceAccount' | 'command' | 'service';
  /** The user or service account id; for a command, the command line's name (e.g. `admin set-role`). */
  id: string | null;
  role: string | null;
}

/** Through which credential: an access token (its OAuth client), an API key (its id), or the machine. */
export interface AuditCredential {
  kind: 'token' | 'apiKey' | 'command' | 'none';
  clientId?: string;
  apiKeyId?: string;
}

/** The circumstances every entry of one request (or command) shares. */
export interface AuditOrigin {
  actor: AuditActor;
  credential: AuditCredential;
  /** The client's address as the service sees it (behind a trusted proxy: the forwarded one). */
  address: string | null;
  requestId: string | null;
}

// The package is CommonJS whose declaration says `export default`: at run time the default import is
// the function itself.
const canonicalize = canonicalizeModule as unknown as (input: unknown) => string | undefined;

export const SERVICE_ORIGIN: AuditOrigin = {
  actor: { kind: 'service', id: null, role: null },
  credential: { kind: 'none' },
  address: null,
  requestId: null,
};

const origins = new AsyncLocalStorage<AuditOrigin>();

/** Runs `work` with `origin` as the origin of every entry it records (the HTTP edge, the CLI). */
export function withAuditOrigin<T>(origin: AuditOrigin, work: () => T): T {
  return origins.run(origin, work);
}

/**
 * Who acts in the current context (`user:<id>`, `serviceAccount:<id>`), or undefined (the service
 * itself, no request): the principal whose writes its reads must show (src/db/replicas.ts).
 */
export function currentPrincipal(): string | undefined {
  const actor = origins.getStore()?.actor;
  return actor?.id ? `${actor.kind}:${actor.id}` : undefined;
}

/** The origin of a command run on the service's machine (`npm run admin`). */
export function commandOrigin(command: string): AuditOrigin {
  return {
    ...SERVICE_ORIGIN,
    actor: { kind: 'command', id: command, role: 'admin' },
    credential: { kind: 'command' },
  };
}

/** The object an entry is about. */
export interface AuditObject {
  type: string;
  id: string;
  /** The user the object belongs to (a collection's studio, a key's owner): who may read the entry. */
  ownerId?: string | null;
  collectionId?: string | null;
}

/** An entry as decided, before the store gives it its place (`seq`) in the chain. */
export interface AuditDraft {
  at: Date;
  action: AuditAction;
  actorId: string | null;
  objectType: string;
  objectId: string;
  ownerId: string | null;
  collectionId: string | null;
  /** The entry's canonical JSON: what is hashed and answered. */
  body: string;
}

/**
 * Field names whose values never enter an entry, at any depth: secrets and what stands for them
 * (digests, codes, seeds, private keys, passwords, tokens). The call sites pass public views; this
 * is the net under them.
 */
const SECRET_FIELD =
  /secret|password|hash|private|token|^seed$|^serverSeed$|^code$|^codes$|^key$|^plaintext$/i;

function scrub(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrub);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [name, field] of Object.entries(value)) {
      if (SECRET_FIELD.test(name) || field === undefined) continue;
      out[name] = scrub(field);
    }
    return out;
  }
  return value;
}

/** An entry of `action` about `object`, with the state before and after where it applies. */
export function auditDraft(
  action: AuditAction,
  object: AuditObject,
  change: { before?: unknown; after?: unknown } = {},
  at: Date = new Date(),
): AuditDraft {
  const origin = origins.getStore() ?? SERVICE_ORIGIN;
  const body = canonicalize(
    scrub({
      action,
      at: at.toISOString(),
      actor: origin.actor,
      credential: origin.credential,
      address: origin.address,
      requestId: origin.requestId,
      object: {
        type: object.type,
        id: object.id,
        ownerId: object.ownerId ?? null,
        collectionId: object.collectionId ?? null,
      },
      before: change.before ?? null,
      after: change.after ?? null,
    }),
  ) as string;
  return {
    at,
    action,
    actorId: origin.actor.kind === 'user' || origin.actor.kind === 'serviceAccount' ? origin.actor.id : null,
    objectType: object.type,
    objectId: object.id,
    ownerId: object.ownerId ?? null,
    collectionId: object.collectionId ?? null,
    body,
  };
}

/** Entry `seq`'s hash: SHA-256 (hex) of `prevHash`, `seq` and `body`, one per line. */
export function entryHash(prevHash: string, seq: number, body: string): string {
  return createHash('sha256').update(`${prevHash}\n${seq}\n${body}`).digest('hex');
}

/** The statement every append starts with: it takes the tip's lock and reserves `?` sequence numbers. */
export const RESERVE_AUDIT_SEQS = 'update audit_tip set seq = seq + ? where id = 1 returning seq, hash';
/** The statement every append ends with: the new tip's hash. */
export const SET_AUDIT_TIP = 'update audit_tip set hash = ? where id = 1';

/** The rows of `drafts` once `reserved` (the tip after reserving their seqs) is known: hashes chained. */
export function chainDrafts(
  drafts: readonly AuditDraft[],
  reserved: { seq: number; hash: string },
): { seq: number; prevHash: string; hash: string; draft: AuditDraft }[] {
  let seq = reserved.seq - drafts.length;
  let prevHash = reserved.hash;
  return drafts.map((draft) => {
    seq += 1;
    const hash = entryHash(prevHash, seq, draft.body);
    const row = { seq, prevHash, hash, draft };
    prevHash = hash;
    return row;
  });
}

/**
 * Appends `drafts` in `em`'s transaction (which must be open: an entry is written with its action or
 * not at all). For the ORM's writes; a ledger plan carries its drafts in `Plan.audit` instead. Call
 * it as the transaction's last write: the tip's lock is then always the last lock taken, and no two
 * transactions wait on each other through it.
 */
export async function recordAudit(em: EntityManager, ...drafts: AuditDraft[]): Promise<void> {
  if (drafts.length === 0) return;
  if (!em.isInTransaction()) throw new Error('recordAudit needs the transaction of the action it records');
  const [tip] = await em.execute<{ seq: number | string; hash: string }[]>(RESERVE_AUDIT_SEQS, [
    drafts.length,
  ]);
  const rows = chainDrafts(drafts, { seq: Number(tip.seq), hash: tip.hash });
  for (const { seq, prevHash, hash, draft } of rows) {
    await em.insert(AuditEntry, {
      seq,
      at: draft.at,
      action: draft.action,
      actorId: draft.actorId,
      objectType: draft.objectType,
      objectId: draft.objectId,
      ownerId: draft.ownerId,
      collectionId: draft.collectionId,
      body: draft.body,
      prevHash,
      hash,
    });
  }
  await em.execute(SET_AUDIT_TIP, [rows[rows.length - 1].hash]);
}

/**
 * For a write made with a plain `em.flush()` (a collection, a recipe, a store offer): flushes `em`
 * and appends the entries `drafts` makes (after the flush, so generated values are known) in one
 * transaction, begun here unless `em` is in one already.
 */
export async function flushAudited(
  em: EntityManager,
  drafts: () => AuditDraft | AuditDraft[],
): Promise<void> {
  if (em.isInTransaction()) {
    await em.flush();
    await recordAudit(em, ...[drafts()].flat());
    return;
  }
  await em.begin();
  try {
    await em.flush();
    await recordAudit(em, ...[drafts()].flat());
    await em.commit();
  } catch (error) {
    await em.rollback();
    throw error;
  }
}

/** One stored entry as the verifier and the reads see it. */
export interface AuditRow extends Omit<AuditDraft, 'action'> {
  seq: number;
  /** A stored action (checked against the body, not trusted to be a known one). */
  action: string;
  prevHash: string;
  hash: string;
}

/** The tip row: the last entry, and the last pruned one (retention's checkpoint). */
export interface AuditTipRow {
  seq: number;
  hash: string;
  prunedSeq: number;
  prunedHash: string;
}

/**
 * What is wrong with the chain `rows` (in seq order) ending at `tip`: each a sentence; none when it
 * holds. A removed entry leaves a gap (or a tip beyond the last), an altered one a hash that does
 * not match its body (or columns that do not match it), reordered ones both.
 */
export function chainProblems(rows: readonly AuditRow[], tip: AuditTipRow): string[] {
  const problems: string[] = [];
  let expectedSeq = tip.prunedSeq + 1;
  let prevHash = tip.prunedHash;
  for (const row of rows) {
    if (row.seq !== expectedSeq)
      problems.push(
        row.seq > expectedSeq
          ? `entries ${expectedSeq}..${row.seq - 1} are missing`
          : `entry ${row.seq} is out of order (expected ${expectedSeq})`,
      );
    if (row.prevHash !== prevHash)
      problems.push(`entry ${row.seq}: its prev_hash is not the hash of the entry before it`);
    if (row.hash !== entryHash(row.prevHash, row.seq, row.body))
      problems.push(`entry ${row.seq}: its hash does not match its content (altered)`);
    problems.push(...columnProblems(row));
    expectedSeq = row.seq + 1;
    prevHash = row.hash;
  }
  if (tip.seq !== expectedSeq - 1)
    problems.push(
      tip.seq > expectedSeq - 1
        ? `entries ${expectedSeq}..${tip.seq} are missing (the tip is ${tip.seq})`
        : `entries after the tip ${tip.seq} exist`,
    );
  else if (tip.hash !== prevHash) problems.push(`the tip's hash is not the last entry's (entry ${tip.seq})`);
  return problems;
}

function columnProblems(row: AuditRow): string[] {
  let body: { action?: string; at?: string; object?: AuditObject; actor?: AuditActor };
  try {
    body = JSON.parse(row.body);
  } catch {
    return [`entry ${row.seq}: its body is not JSON`];
  }
  if (canonicalize(body) !== row.body) return [`entry ${row.seq}: its body is not canonical JSON`];
  const actorId =
    body.actor?.kind === 'user' || body.actor?.kind === 'serviceAccount' ? (body.actor.id ?? null) : null;
  const same =
    body.action === row.action &&
    body.at === new Date(row.at).toISOString() &&
    body.object?.type === row.objectType &&
    body.object?.id === row.objectId &&
    (body.object?.ownerId ?? null) === row.ownerId &&
    (body.object?.collectionId ?? null) === row.collectionId &&
    actorId === row.actorId;
  return same ? [] : [`entry ${row.seq}: its columns do not match its body (altered)`];
}

async function readTip(em: EntityManager): Promise<AuditTipRow> {
  const [tip] = await em.execute<Record<string, unknown>[]>(
    'select seq, hash, pruned_seq, pruned_hash from audit_tip where id = 1',
  );
  return {
    seq: Number(tip.seq),
    hash: String(tip.hash),
    prunedSeq: Number(tip.pruned_seq),
    prunedHash: String(tip.pruned_hash),
  };
}

function rowOf(entry: AuditEntry): AuditRow {
  return {
    ...entry,
    at: new Date(entry.at),
    actorId: entry.actorId ?? null,
    ownerId: entry.ownerId ?? null,
    collectionId: entry.collectionId ?? null,
  };
}

/**
 * Verifies the whole chain on `orm`'s database (read in pages, in one snapshot, REPEATABLE READ on
 * PostgreSQL, so that the tip and the entries agree): its problems, the number of entries and the tip.
 */
export async function verifyAudit(
  orm: Orm,
  pageSize = 1000,
): Promise<{ problems: string[]; entries: number; tip: AuditTipRow }> {
  return inSnapshot(orm, async (em) => {
    const tip = await readTip(em);
    const problems: string[] = [];
    let entries = 0;
    let after = 0;
    let last: AuditRow | undefined;
    const partial: AuditTipRow = { ...tip };
    for (;;) {
      const page =
        // Not kept in the unit of work: a million entries held there outgrew the heap (issue 34).
        (
          await em.find(
            AuditEntry,
            { seq: { $gt: after } },
            { orderBy: { seq: 'asc' }, limit: pageSize, disableIdentityMap: true },
          )
        ).map(rowOf);
      if (page.length === 0) break;
      // Each page is checked as the chain continuing from the page before (or the checkpoint).
      const from = last ? { ...partial, prunedSeq: last.seq, prunedHash: last.hash } : partial;
      const lastOfPage = page[page.length - 1];
      problems.push(...chainProblems(page, { ...from, seq: lastOfPage.seq, hash: lastOfPage.hash }));
      entries += page.length;
      last = lastOfPage;
      after = lastOfPage.seq;
    }
    // Then the tip against the last entry (or the checkpoint, when every entry was pruned).
    const end = last ?? { seq: tip.prunedSeq, hash: tip.prunedHash };
    if (tip.seq !== end.seq)
      problems.push(
        tip.seq > end.seq
          ? `entries ${end.seq + 1}..${tip.seq} are missing (the tip is ${tip.seq})`
          : `entries after the tip ${tip.seq} exist`,
      );
    else if (tip.hash !== end.hash)
      problems.push(`the tip's hash is not the last entry's (entry ${tip.seq})`);
    return { problems, entries, tip };
  });
}

/**
 * Retention: removes the entries older than `before`, the oldest first, `batch` at a time, each
 * batch in its own transaction under the tip's lock, moving the checkpoint (`pruned_seq`,
 * `pruned_hash`) to the last entry removed, so the chain still verifies from there. Returns how many
 * were removed.
 */
export async function pruneAudit(orm: Orm, before: Date, batch = 1000): Promise<number> {
  let removed = 0;
  for (;;) {
    const count = await inTransaction(orm, async (em) => {
      await em.execute(RESERVE_AUDIT_SEQS, [0]);
      const old = await em.find(
        AuditEntry,
        { at: { $lt: before } },
        { orderBy: { seq: 'asc' }, limit: batch, fields: ['seq', 'hash'] },
      );
      if (old.length === 0) return 0;
      const last = old[old.length - 1];
      await em.nativeDelete(AuditEntry, { seq: { $lte: last.seq } });
      await em.execute('update audit_tip set pruned_seq = ?, pruned_hash = ? where id = 1', [
        last.seq,
        last.hash,
      ]);
      return old.length;
    });
    removed += count;
    if (count < batch) return removed;
  }
}

/** The filters of `GET /api/v1/audit-log`. */
export interface AuditQuery {
  actor?: string;
  objectType?: string;
  objectId?: string;
  action?: string;
  from?: Date;
  to?: Date;
  /** Only entries about objects these users own (a studio's view); absent: every entry (an admin's). */
  ownerIds?: readonly string[];
  /** Entries with a seq below this (the cursor: newest first). */
  beforeSeq?: number;
  limit: number;
}

/** Entries matching `query`, newest first; one more than `limit` tells the caller a page follows. */
export async function listAudit(em: EntityManager, query: AuditQuery): Promise<AuditRow[]> {
  const where: Record<string, unknown> = {};
  if (query.actor !== undefined) where.actorId = query.actor;
  if (query.objectType !== undefined) where.objectType = query.objectType;
  if (query.objectId !== undefined) where.objectId = query.objectId;
  if (query.action !== undefined) where.action = query.action;
  Object.assign(where, ownerCondition(query.ownerIds));
  if (query.beforeSeq !== undefined) where.seq = { $lt: query.beforeSeq };
  if (query.from || query.to)
    where.at = { ...(query.from && { $gte: query.from }), ...(query.to && { $lt: query.to }) };
  const rows = await em.find(AuditEntry, where, { orderBy: { seq: 'desc' }, limit: query.limit + 1 });
  return rows.map(rowOf);
}

/** Who may read entries (`auditReadableOwners`, ./authorization.ts) as a condition: absent, every entry (an admin's). */
function ownerCondition(ownerIds: readonly string[] | undefined): Record<string, unknown> {
  return ownerIds === undefined ? {} : { ownerId: { $in: [...ownerIds] } };
}

/**
 * The entries after `afterSeq` up to `upToSeq` that `ownerIds` (`auditReadableOwners`) may read,
 * oldest first, at most `limit`: what an `auditRecorded` webhook is sent next.
 */
export async function auditEntriesAfter(
  em: EntityManager,
  query: { afterSeq: number; upToSeq: number; ownerIds: readonly string[] | undefined; limit: number },
): Promise<AuditRow[]> {
  const rows = await em.find(
    AuditEntry,
    { seq: { $gt: query.afterSeq, $lte: query.upToSeq }, ...ownerCondition(query.ownerIds) },
    { orderBy: { seq: 'asc' }, limit: query.limit },
  );
  return rows.map(rowOf);
}

/** The last entry's seq (the tip; 0 before the first). */
export async function auditTipSeq(em: EntityManager): Promise<number> {
  const [tip] = await em.execute<{ seq: number | string }[]>('select seq from audit_tip where id = 1');
  return Number(tip.seq);
}

/** An entry as the contract's AuditEntry: its stored body (written by auditDraft) with its place in the chain. */
export function auditEntryView(row: AuditRow): components['schemas']['AuditEntry'] {
  const body: Omit<components['schemas']['AuditEntry'], 'seq' | 'prevHash' | 'hash'> = JSON.parse(row.body);
  return { seq: row.seq, ...body, prevHash: row.prevHash, hash: row.hash };
}

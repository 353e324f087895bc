// `auditRecorded` webhooks (issue 37): new audit trail entries sent to the webhooks of studios and
// admins subscribed to them, each entry only if the webhook's owner may read it in the audit log.
// The source is the audit trail itself (`audit_entry`, in `seq` order), not the outbox: no reader of
// the outbox (GET /api/v1/events, the WebSocket live and replayed, the outbox dispatcher) can see an
// audit entry, because none is ever written there. Per subscription:
// - `auditCursor` is the last entry `seq` it is done with (null: not subscribed), set at creation to
//   the tip (its own creation entry); it never passes the tip read at the start of a turn. Appends
//   take the tip's lock until they commit, so entries commit in `seq` order and an entry below a
//   committed tip is committed: reading `seq <= tip` never skips one still to come, and an entry of
//   a rolled-back transaction never existed (its `seq` is drawn again by the next append);
// - who may read which entry is decided at every turn with the owner's current role, by
//   `auditReadableOwners` (the audit log's decision, src/domain/authorization.ts): an admin every entry, a
//   studio its account's, anyone else none (the cursor moves past them: an owner demoted from studio
//   is sent nothing);
// - one instance at a time serves it, under a lease of its own (`auditLockedBy`,
//   `auditLockedUntil`), sending entries one at a time in `seq` order and moving the cursor (guarded
//   by its previous value) after each success: at least once, a crash between the two sends it again
//   with the same `webhook-id`;
// - a failure (no 2xx within WEBHOOK_TIMEOUT_MS, or an address refused) keeps the cursor, and the
//   entry is tried again after an exponential backoff (from WEBHOOK_RETRY_BASE_MS, up to an hour),
//   the later entries waiting behind it. Deliveries of audit entries have no delivery rows: the
//   audit log is where an entry missed is read.
// Signed as every webhook (./sender.ts, Standard Webhooks, the subscription's secrets). The feed
// looks every POLL_MS and does nothing while the tip has not moved and no retry is due; each
// subscription is served on its own (a slow receiver holds up only its own subscription).
import { randomUUID } from 'node:crypto';
import { accountOf } from '../db/account-members.ts';
import type { Database } from '../db/database.ts';
import { WebhookSubscription } from '../db/entities/WebhookSubscription.ts';
import { auditEntriesAfter, auditEntryView, auditTipSeq } from '../domain/audit.ts';
import { auditReadableOwners } from '../domain/authorization.ts';
import { ForbiddenError } from '../domain/errors.ts';
import { actingNow } from '../domain/ledger/recipes.ts';
import type { Logger } from '../observability/logger.ts';
import { deliveryId } from './delivery-id.ts';
import { createPools, sendWebhook } from './sender.ts';
import { retryDelayMs } from './slow-path.ts';
import type { WebhookService } from './subscriptions.ts';
import type { TargetPolicy } from './targets.ts';

/** How often the feed looks at the tip. */
const POLL_MS = 250;
/** Entries read per step. */
const BATCH = 100;
/** Subscriptions served at once by one instance. */
const MAX_SERVING = 16;

export interface AuditFeed {
  /** A subscription changed (made, enabled): look again even if the tip has not moved. */
  changed(): void;
  stop(): Promise<void>;
}

export function createAuditFeed(deps: {
  database: Database;
  service: WebhookService;
  options: TargetPolicy & { timeoutMs: number; retryBaseMs: number };
  userAgent: string;
  logger: Logger;
}): AuditFeed {
  const { database, service, options, logger } = deps;
  const { orm } = database;
  const instance = randomUUID();
  const pools = createPools();
  const sendOptions = { ...options, userAgent: deps.userAgent, pools };
  const leaseMs = 2 * options.timeoutMs + 2000;
  /** Subscriptions whose last attempt failed: when to try again, after how many failures. */
  const retries = new Map<string, { at: number; attempts: number }>();
  /** Subscriptions being served (each by one turn at a time; a slow one holds up only itself). */
  const serving = new Map<string, Promise<void>>();
  /** The tip every subscription was set off towards (-1: look again). */
  let served = -1;
  let looking: Promise<void> | null = null;
  let stopped = false;

  async function tick(): Promise<void> {
    const em = orm.em.fork();
    const tip = await auditTipSeq(em);
    const now = Date.now();
    const due = [...retries.values()].some((retry) => retry.at <= now);
    if (tip === served && !due) return;
    const subs = await em.find(
      WebhookSubscription,
      { auditCursor: { $ne: null, $lt: tip }, enabled: true, deletedAt: null },
      { orderBy: { id: 'asc' } },
    );
    let behind = false;
    for (const sub of subs) {
      const retry = retries.get(sub.id);
      if (stopped || serving.has(sub.id) || serving.size >= MAX_SERVING || (retry && retry.at > now)) {
        behind = true;
        continue;
      }
      const work = serve(sub, tip)
        .then((done) => {
          if (!done) served = -1;
        })
        .catch((error: unknown) => {
          served = -1;
          logger.warn({ err: error, webhook: sub.id }, 'auditRecorded dispatch failed');
        })
        .finally(() => serving.delete(sub.id));
      serving.set(sub.id, work);
    }
    for (const id of retries.keys()) if (!subs.some((sub) => sub.id === id)) retries.delete(id);
    served = behind ? -1 : tip;
  }

  /** Brings `sub` up to `tip`; false when it is left behind (a failure, another instance's lease). */
  async function serve(sub: WebhookSubscription, tip: number): Promise<boolean> {
    const em = orm.em.fork();
    const leased = await em.nativeUpdate(
      WebhookSubscription,
      {
        id: sub.id,
        $or: [
          { auditLockedUntil: null },
          { auditLockedUntil: { $lt: new Date() } },
          { auditLockedBy: instance },
        ],
      },
      { auditLockedBy: instance, auditLockedUntil: new Date(Date.now() + leaseMs) },
    );
    if (leased === 0) return false;
    try {
      const fresh = await em.findOne(WebhookSubscription, { id: sub.id, enabled: true, deletedAt: null });
      if (!fresh || fresh.auditCursor === null || fresh.auditCursor === undefined) return true;
      let cursor = Number(fresh.auditCursor);
      const moveTo = async (seq: number): Promise<boolean> => {
        const moved = await em.nativeUpdate(
          WebhookSubscription,
          { id: sub.id, auditCursor: cursor },
          { auditCursor: seq },
        );
        cursor = seq;
        return moved === 1;
      };
      let ownerIds: readonly string[] | undefined;
      try {
        const owner = fresh.owner.id;
        ownerIds = await auditReadableOwners(
          em,
          await actingNow(database.reads, owner),
          (await accountOf(em, owner)) ?? owner,
        );
      } catch (error) {
        if (!(error instanceof ForbiddenError)) throw error;
        // The owner may read no entry now (no longer a studio or an admin): none is sent.
        await moveTo(tip);
        return true;
      }
      const secrets = service.signingSecrets(fresh);
      while (cursor < tip && !stopped) {
        const rows = await auditEntriesAfter(em, { afterSeq: cursor, upToSeq: tip, ownerIds, limit: BATCH });
        for (const row of rows) {
          const data = auditEntryView(row);
          const outcome = await sendWebhook(
            fresh.url,
            {
              id: deliveryId(`${sub.id}:audit`, row.seq, row.at.getTime()),
              body: JSON.stringify({ type: 'auditRecorded', occurredAt: data.at, data }),
              secrets,
            },
            sendOptions,
          );
          if (!outcome.ok) {
            const attempts = (retries.get(sub.id)?.attempts ?? 0) + 1;
            retries.set(sub.id, { at: Date.now() + retryDelayMs(options.retryBaseMs, attempts), attempts });
            logger.info(
              { webhook: sub.id, seq: row.seq, attempts, error: outcome.error },
              'auditRecorded delivery failed; retrying later',
            );
            return false;
          }
          retries.delete(sub.id);
          // Moved by someone else meanwhile (it never should): stop here, the next turn reads it again.
          if (!(await moveTo(row.seq))) return false;
        }
        // Fewer than a batch: nothing else the owner may read up to the tip.
        if (rows.length < BATCH && cursor < tip && !(await moveTo(tip))) return false;
      }
      return cursor >= tip;
    } finally {
      await em
        .nativeUpdate(
          WebhookSubscription,
          { id: sub.id, auditLockedBy: instance },
          { auditLockedBy: null, auditLockedUntil: null },
        )
        .catch((error: unknown) =>
          logger.warn({ err: error, webhook: sub.id }, 'audit lease release failed'),
        );
    }
  }

  const poll = setInterval(() => {
    if (looking || stopped) return;
    looking = tick()
      .catch((error: unknown) => {
        served = -1;
        logger.warn({ err: error }, 'auditRecorded dispatch failed');
      })
      .finally(() => {
        looking = null;
      });
  }, POLL_MS);
  poll.unref();

  return {
    changed() {
      served = -1;
    },
    async stop() {
      stopped = true;
      clearInterval(poll);
      await looking;
      await Promise.allSettled([...serving.values()]);
      pools.close();
    },
  };
}

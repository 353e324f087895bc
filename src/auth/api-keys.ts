// Application API keys: `gak_` + 43 base64url characters (256 random bits), shown once, stored as a
// SHA-256 digest (see client-secrets.ts for why a fast hash is right for them). Every protected
// request looks its key up, so lookups are cached in memory for a few seconds; revoking a key, or
// changing its owner's role, on this instance evicts it at once (other instances notice within the
// cache lifetime, KEY_CACHE_TTL_MS: the documented bound of 13.7).

import type { EntityManager } from '@mikro-orm/sql';
import { ApiKey } from '../db/entities/ApiKey.ts';
import { Application } from '../db/entities/Application.ts';
import type { UserRole } from '../db/entities/User.ts';
import { User } from '../db/entities/User.ts';
import type { Orm } from '../db/orm.ts';
import { inTransaction } from '../db/transactions.ts';
import { auditDraft, recordAudit } from '../domain/audit.ts';
import { effectiveServiceRole, ownedBy } from '../domain/authorization.ts';
import { ForbiddenError, NotFoundError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { digestSecret, generateSecret } from './client-secrets.ts';
import { lockUser, QuotaExceededError, type Quotas } from './quotas.ts';
import { isServiceAccountId } from './service-account-ids.ts';
import { serviceAccountOwner } from './service-accounts.ts';

export const API_KEY_PATTERN = /^gak_[A-Za-z0-9_-]{43}$/;
const PREFIX_LENGTH = 12;
/** How long another instance may go on using a revoked key or its owner's previous role. */
export const KEY_CACHE_TTL_MS = 5_000;
const CACHE_LIMIT = 10_000;
/** lastUsedAt is a hint for the owner, not an audit log: written at most once a minute per key. */
const LAST_USED_GRANULARITY_MS = 60_000;

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  clientId: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** What authenticating a request needs to know about a key (and its owner's current role). */
export interface ActiveApiKey {
  id: string;
  userId: string;
  clientId: string;
  role: UserRole;
  /** A service account's owner: changing the owner's role re-caps the account (see forgetUser). */
  ownerId?: string;
}

function view(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    clientId: key.application.clientId,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
  };
}

export interface ApiKeyService {
  create(userId: string, clientId: string, name: string): Promise<ApiKeyView & { key: string }>;
  list(userId: string): Promise<ApiKeyView[]>;
  /** Idempotent; 404 when the user has no key with this id. */
  revoke(userId: string, keyId: string): Promise<void>;
  /** Drops this instance's cached lookups of these keys (revoked by another module). */
  forgetKeys(keyIds: string[]): void;
  /** Revokes every key of an application (it is being deleted). */
  revokeForApplication(em: EntityManager, clientId: string): Promise<void>;
  /** The active key for a presented secret, or null (unknown, revoked, or its application deleted). */
  resolve(secret: string): Promise<ActiveApiKey | null>;
  /** Drops this instance's cached lookups of the user's keys and its service accounts' (its role changed). */
  forgetUser(userId: string): void;
}

export function createApiKeyService(orm: Orm, quotas: Pick<Quotas, 'apiKeysPerUser'>): ApiKeyService {
  interface Cached {
    key: ActiveApiKey | null;
    expiresAt: number;
  }
  const cache = new Map<string, Cached>();
  const lastUsedWritten = new Map<string, number>();

  function evict(keyIds: Set<string>): void {
    for (const [digest, entry] of cache) if (entry.key && keyIds.has(entry.key.id)) cache.delete(digest);
  }

  function evictUser(userId: string): void {
    for (const [digest, entry] of cache)
      if (entry.key?.userId === userId || entry.key?.ownerId === userId) cache.delete(digest);
  }

  async function load(digest: string): Promise<ActiveApiKey | null> {
    const em = orm.em.fork();
    const key = await em.findOne(
      ApiKey,
      { keyHash: digest, revokedAt: null },
      { populate: ['user', 'application'] },
    );
    if (!key || key.application.getEntity().deletedAt) return null;
    const now = Date.now();
    if (
      (key.lastUsedAt?.getTime() ?? 0) < now - LAST_USED_GRANULARITY_MS &&
      (lastUsedWritten.get(key.id) ?? 0) < now - LAST_USED_GRANULARITY_MS
    ) {
      if (lastUsedWritten.size >= CACHE_LIMIT) lastUsedWritten.clear();
      lastUsedWritten.set(key.id, now);
      await em.nativeUpdate(ApiKey, { id: key.id }, { lastUsedAt: new Date(now) });
    }
    const role = key.user.getEntity().role;
    if (!isServiceAccountId(key.user.id))
      return { id: key.id, userId: key.user.id, clientId: key.application.clientId, role };
    // A service account acts with its own role only while its owner's role allows it.
    const owner = await serviceAccountOwner(em, key.user.id);
    if (!owner) return null;
    return {
      id: key.id,
      userId: key.user.id,
      clientId: key.application.clientId,
      role: effectiveServiceRole(role, owner.ownerRole),
      ownerId: owner.ownerId,
    };
  }

  return {
    async create(userId, clientId, name) {
      return inTransaction(orm, async (em) => {
        const application = await em.findOne(Application, { clientId, deletedAt: null });
        if (!application)
          throw new ForbiddenError(`The application ${clientId} of this token has been deleted.`);
        await lockUser(em, userId);
        if ((await em.count(ApiKey, { user: userId, revokedAt: null })) >= quotas.apiKeysPerUser) {
          throw new QuotaExceededError(
            'active API keys',
            quotas.apiKeysPerUser,
            'revoke one you no longer use first.',
          );
        }
        const secret = `gak_${generateSecret()}`;
        const key = em.create(ApiKey, {
          id: newId('key'),
          application,
          user: em.getReference(User, userId),
          name,
          prefix: secret.slice(0, PREFIX_LENGTH),
          keyHash: digestSecret(secret),
          createdAt: new Date(),
          lastUsedAt: null,
          revokedAt: null,
        });
        await em.flush();
        await recordAudit(
          em,
          auditDraft(
            'apiKey.created',
            { type: 'apiKey', id: key.id, ownerId: userId },
            {
              after: { name, clientId, prefix: key.prefix },
            },
          ),
        );
        return { ...view(key), key: secret };
      });
    },

    async list(userId) {
      const keys = await orm.em
        .fork()
        .find(ApiKey, { user: userId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
      return keys.map(view);
    },

    async revoke(userId, keyId) {
      await inTransaction(orm, async (em) => {
        const key = await em.findOne(ApiKey, { id: keyId, ...ownedBy(userId, 'user') });
        if (!key) throw new NotFoundError(`No API key with id ${keyId}.`);
        if (key.revokedAt) return;
        key.revokedAt = new Date();
        await em.flush();
        await recordAudit(
          em,
          auditDraft(
            'apiKey.revoked',
            { type: 'apiKey', id: key.id, ownerId: userId },
            {
              after: { revokedAt: key.revokedAt },
            },
          ),
        );
      });
      evict(new Set([keyId]));
    },

    async revokeForApplication(em, clientId) {
      const keys = await em.find(ApiKey, { application: clientId, revokedAt: null }, { fields: ['id'] });
      await em.nativeUpdate(ApiKey, { application: clientId, revokedAt: null }, { revokedAt: new Date() });
      evict(new Set(keys.map((key) => key.id)));
    },

    async resolve(secret) {
      if (!API_KEY_PATTERN.test(secret)) return null;
      const digest = digestSecret(secret);
      const now = Date.now();
      const cached = cache.get(digest);
      if (cached && cached.expiresAt > now) return cached.key;
      const key = await load(digest);
      if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
      cache.set(digest, { key, expiresAt: now + KEY_CACHE_TTL_MS });
      return key;
    },

    forgetUser(userId) {
      evictUser(userId);
    },

    forgetKeys(keyIds) {
      evict(new Set(keyIds));
    },
  };
}

/**
 * Whether the key is still usable (not revoked, its application not deleted), read from the
 * database: long-lived connections (WebSockets) ask this periodically, so a revocation made on any
 * instance reaches them. One indexed lookup.
 */
export async function apiKeyIsActive(orm: Orm, keyId: string): Promise<boolean> {
  const active = await orm.em
    .fork()
    .count(ApiKey, { id: keyId, revokedAt: null, application: { deletedAt: null } });
  return active > 0;
}

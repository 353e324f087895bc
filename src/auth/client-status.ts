// Whether the OAuth client a token was issued to still exists. An access token is a JWT verified
// locally (and remembered), so deleting an application or a service account would otherwise leave
// its tokens working until they expire. Every authenticated request asks here: answers are kept for
// KEY_CACHE_TTL_MS like API-key lookups (the documented bound for other instances), and a deletion
// on this instance forgets the client at once.
import { Application } from '../db/entities/Application.ts';
import type { Orm } from '../db/orm.ts';
import { KEY_CACHE_TTL_MS } from './api-keys.ts';

const CACHE_LIMIT = 10_000;

export interface ClientStatus {
  /** Synchronous when the answer is cached (the hot path costs no extra await). */
  isActive(clientId: string): boolean | Promise<boolean>;
  /** The client was deleted on this instance: stop accepting its tokens now. */
  forget(clientId: string): void;
}

export function createClientStatus(orm: Orm): ClientStatus {
  const cache = new Map<string, { active: boolean; expiresAt: number }>();
  return {
    isActive(clientId) {
      const cached = cache.get(clientId);
      if (cached && cached.expiresAt > Date.now()) return cached.active;
      return lookUp(clientId);
    },
    forget(clientId) {
      cache.set(clientId, { active: false, expiresAt: Date.now() + KEY_CACHE_TTL_MS });
    },
  };

  async function lookUp(clientId: string): Promise<boolean> {
    const now = Date.now();
    const active = (await orm.em.fork().count(Application, { clientId, deletedAt: null })) > 0;
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(clientId, { active, expiresAt: now + KEY_CACHE_TTL_MS });
    return active;
  }
}

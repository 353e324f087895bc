// Single-use tickets that let a browser open a WebSocket without putting its token or API key in
// the URL: the ticket is random, lives 30 s, and is consumed on first use. Kept in Redis when
// several instances share the load (any instance may receive the connection), else in memory.
// While Redis is away a ticket is kept in the issuing instance's memory: it opens a connection to
// that instance only (a load balancer may send the connection elsewhere; the client asks again).
import { randomBytes } from 'node:crypto';
import type { AuthContext } from '../auth/caller.ts';
import type { RedisLink } from '../redis/link.ts';

export const TICKET_TTL_SECONDS = 30;

export interface TicketStore {
  issue(auth: AuthContext): Promise<{ ticket: string; expiresAt: Date }>;
  /** The credentials the ticket stands for, once; null when unknown, used or expired. */
  redeem(ticket: string): Promise<AuthContext | null>;
  close(): Promise<void>;
}

type StoredAuth = Omit<AuthContext, 'scopes'> & { scopes: string[] };

const serialize = (auth: AuthContext): string => JSON.stringify({ ...auth, scopes: [...auth.scopes] });
const deserialize = (text: string): AuthContext => {
  const stored = JSON.parse(text) as StoredAuth;
  return { ...stored, scopes: new Set(stored.scopes) };
};
const newTicket = () => randomBytes(32).toString('base64url');

export function memoryTickets(): TicketStore {
  const tickets = new Map<string, { auth: string; expires: number }>();
  return {
    async issue(auth) {
      const now = Date.now();
      for (const [key, value] of tickets) if (value.expires <= now) tickets.delete(key);
      const ticket = newTicket();
      const expires = now + TICKET_TTL_SECONDS * 1000;
      tickets.set(ticket, { auth: serialize(auth), expires });
      return { ticket, expiresAt: new Date(expires) };
    },
    async redeem(ticket) {
      const entry = tickets.get(ticket);
      tickets.delete(ticket);
      if (!entry || entry.expires <= Date.now()) return null;
      return deserialize(entry.auth);
    },
    async close() {},
  };
}

export function redisTickets(link: RedisLink, onFallback?: () => void): TicketStore {
  const redis = link.client('websocket tickets');
  const local = memoryTickets();
  const key = (ticket: string) => `${link.prefix}ws-ticket:${ticket}`;
  return {
    async issue(auth) {
      if (link.usable()) {
        try {
          const ticket = newTicket();
          await redis.set(key(ticket), serialize(auth), 'EX', TICKET_TTL_SECONDS);
          return { ticket, expiresAt: new Date(Date.now() + TICKET_TTL_SECONDS * 1000) };
        } catch (error) {
          link.failed(error, 'websocket tickets');
        }
      }
      onFallback?.();
      return local.issue(auth);
    },
    async redeem(ticket) {
      const issuedHere = await local.redeem(ticket);
      if (issuedHere || !link.usable()) return issuedHere;
      try {
        const stored = await redis.getdel(key(ticket));
        return stored === null ? null : deserialize(stored);
      } catch (error) {
        link.failed(error, 'websocket tickets');
        return null;
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}

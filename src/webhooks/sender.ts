// One webhook request: the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
// `webhook-signature`, signed by the `standardwebhooks` library: HMAC-SHA256 over
// `id.timestamp.body`), sent to the address resolveTarget checked, within a time limit. After a
// secret rotation the previous secret signs too: the header then holds two signatures, and a receiver
// holding either secret verifies the message.
// Connections are kept alive, in one pool per origin and checked address (a name that resolves
// elsewhere later gets a pool of its own, so a pooled socket always leads to a checked address); a
// request on a reused socket that the server closed meanwhile is sent once more on a fresh one.
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { pinnedLookup } from '../net/targets.ts';
import { type Resolver, resolveTarget, type TargetPolicy } from './targets.ts';

/** The most of an answer's body read (and kept as the delivery's last error text). */
const MAX_RESPONSE_BYTES = 4096;
/** Connection pools kept (one per origin and address); the least recently used goes beyond. */
const MAX_POOLS = 256;
/** Idle connections kept per pool. */
const MAX_IDLE_SOCKETS = 64;

/** Kept-alive connections, one pool per origin and checked address (one set per sender thread). */
export interface Pools {
  agent(url: URL, address: string): HttpAgent;
  /** Closes every pooled connection (the service stops). */
  close(): void;
}

export function createPools(): Pools {
  const agents = new Map<string, HttpAgent>();
  return {
    agent(url, address) {
      const key = `${url.protocol}//${url.host}|${address}`;
      let agent = agents.get(key);
      if (agent) {
        // Most recently used last.
        agents.delete(key);
      } else {
        const options = { keepAlive: true, maxFreeSockets: MAX_IDLE_SOCKETS, scheduling: 'lifo' as const };
        agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
        if (agents.size >= MAX_POOLS) {
          const [oldest, evicted] = agents.entries().next().value as [string, HttpAgent];
          agents.delete(oldest);
          evicted.destroy();
        }
      }
      agents.set(key, agent);
      return agent;
    },
    close() {
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
    },
  };
}

/** Signs with one `Webhook` per secret (each decodes its secret once). */
export function signers(secrets: string[]): Webhook[] {
  return secrets.map((secret) => new Webhook(secret));
}

export interface Outcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

export function signatureHeader(
  secrets: string[] | Webhook[],
  messageId: string,
  at: Date,
  body: string,
): string {
  return secrets
    .map((secret) => (typeof secret === 'string' ? new Webhook(secret) : secret).sign(messageId, at, body))
    .join(' ');
}

export async function sendWebhook(
  target: string,
  message: { id: string; body: string; secrets: string[] | Webhook[] },
  options: TargetPolicy & { timeoutMs: number; userAgent: string; pools: Pools; resolve?: Resolver },
): Promise<Outcome> {
  const url = new URL(target);
  let pinned: { address: string; family: number };
  try {
    pinned = await resolveTarget(url, options);
  } catch (error) {
    return { ok: false, statusCode: null, error: (error as Error).message };
  }
  const at = new Date();
  const headers = {
    'content-type': 'application/json',
    'user-agent': options.userAgent,
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatureHeader(message.secrets, message.id, at, message.body),
  };
  // Connect to the checked address only (the Host header and TLS name stay the URL's host).
  const lookup = pinnedLookup(pinned);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const agent = options.pools.agent(url, pinned.address);
  const signal = AbortSignal.timeout(options.timeoutMs);
  const attempt = (retried: boolean) =>
    new Promise<Outcome>((resolve) => {
      const req = send(url, { method: 'POST', headers, lookup, agent, signal });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_RESPONSE_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          const text = ok ? '' : Buffer.concat(chunks).toString('utf8').slice(0, 200);
          resolve({ ok, statusCode: status, error: ok ? null : `HTTP ${status}${text ? `: ${text}` : ''}` });
        });
        res.on('error', (error) =>
          resolve({ ok: false, statusCode: res.statusCode ?? null, error: error.message }),
        );
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the server closed as this request went out: never reached it.
        const stale =
          req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE') && !signal.aborted;
        if (stale && !retried) {
          resolve(attempt(true));
          return;
        }
        resolve({
          ok: false,
          statusCode: null,
          error:
            error.name === 'AbortError' || error.name === 'TimeoutError'
              ? `no answer within ${options.timeoutMs} ms`
              : error.message,
        });
      });
      req.end(message.body);
    });
  return attempt(false);
}

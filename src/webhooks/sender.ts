// One webhook request: the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
// `webhook-signature`, signed by the `standardwebhooks` library: HMAC-SHA256 over
// `id.timestamp.body`), sent to the address resolveTarget checked, within a time limit. After a
// secret rotation the previous secret signs too: the header then holds two signatures, and a receiver
// holding either secret verifies the message.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { resolveTarget, type TargetPolicy } from './targets.ts';

/** The most of an answer's body read (and kept as the delivery's last error text). */
const MAX_RESPONSE_BYTES = 4096;

export interface Outcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

export function signatureHeader(secrets: string[], messageId: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(' ');
}

export async function sendWebhook(
  target: string,
  message: { id: string; body: string; secrets: string[] },
  options: TargetPolicy & { timeoutMs: number; userAgent: string },
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
  const lookup: LookupFunction = (_host, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Outcome>((resolve) => {
    const req = send(url, {
      method: 'POST',
      headers,
      lookup,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
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
        const text = Buffer.concat(chunks).toString('utf8').slice(0, 200);
        resolve({ ok, statusCode: status, error: ok ? null : `HTTP ${status}${text ? `: ${text}` : ''}` });
      });
      res.on('error', (error) =>
        resolve({ ok: false, statusCode: res.statusCode ?? null, error: error.message }),
      );
    });
    req.on('error', (error) =>
      resolve({
        ok: false,
        statusCode: null,
        error:
          error.name === 'AbortError' || error.name === 'TimeoutError'
            ? `no answer within ${options.timeoutMs} ms`
            : error.message,
      }),
    );
    req.end(message.body);
  });
}

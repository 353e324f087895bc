// The webhook HTTP client (src/webhooks/sender.ts, undici underneath): a request that gets no answer
// within the time limit fails with a plain message; a long error body is cut (the rest is not read);
// a request sent on a kept-alive connection the server dropped meanwhile goes once more on a fresh
// one; and the message is signed so that the `standardwebhooks` library verifies it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPools, type Pools, sendWebhook } from '../../../src/webhooks/sender.ts';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const MESSAGE = {
  id: 'whd_01JD4C5Q6R7S8T9V0W1X2Y3Z4A',
  body: '{"id":"1","type":"priceUpdate"}',
  secrets: [SECRET],
};

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

describe('webhook sender', () => {
  let server: Server;
  let url: string;
  let handler: Handler = (_req, res) => res.writeHead(204).end();
  const sockets = new Set<Socket>();
  let pools: Pools;
  const options = () => ({
    allowLoopback: true,
    allowedNetworks: [],
    timeoutMs: 300,
    userAgent: 'test',
    pools,
  });

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`;
    pools = createPools();
  });
  afterEach(() => {
    handler = (_req, res) => res.writeHead(204).end();
  });
  afterAll(async () => {
    pools.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('signs with the Standard Webhooks headers, verified by the library', async () => {
    let seen: { headers: IncomingMessage['headers']; body: string } | null = null;
    handler = (req, res, body) => {
      seen = { headers: req.headers, body };
      res.writeHead(200).end('ok');
    };
    expect(await sendWebhook(url, MESSAGE, options())).toEqual({ ok: true, statusCode: 200, error: null });
    const received = seen as unknown as { headers: Record<string, string>; body: string };
    expect(received.headers['webhook-id']).toBe(MESSAGE.id);
    expect(new Webhook(SECRET).verify(received.body, received.headers)).toEqual(JSON.parse(MESSAGE.body));
  });

  it('fails a request with no answer within the time limit', async () => {
    handler = () => {}; // never answers
    const started = Date.now();
    const outcome = await sendWebhook(url, MESSAGE, options());
    expect(outcome).toEqual({ ok: false, statusCode: null, error: 'no answer within 300 ms' });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('keeps the start of an error answer and stops reading a long one', async () => {
    handler = (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      // Far more than is read: the request does not wait for it (nor for the time limit).
      res.write('x'.repeat(64 * 1024));
      setTimeout(() => res.end('y'.repeat(64 * 1024)), 2000).unref();
    };
    const started = Date.now();
    const outcome = await sendWebhook(url, MESSAGE, options());
    expect(outcome.ok).toBe(false);
    expect(outcome.statusCode).toBe(500);
    expect(outcome.error).toBe(`HTTP 500: ${'x'.repeat(200)}`);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('sends again on a fresh connection when the kept-alive one was dropped by the server', async () => {
    const seenOn: Socket[] = [];
    handler = (req, res) => {
      seenOn.push(req.socket);
      // The second request on the first connection: the server drops it without an answer (as a
      // server whose keep-alive timeout ran out as the request went out).
      if (seenOn.length === 2) req.socket.destroy();
      else res.writeHead(204).end();
    };
    const own = createPools();
    try {
      expect((await sendWebhook(url, MESSAGE, { ...options(), pools: own })).ok).toBe(true);
      // (A request sent within the same turn as the answer goes on another connection: the first
      // is not free again until undici has finished with the answer.)
      await new Promise((resolve) => setTimeout(resolve, 20));
      const second = await sendWebhook(url, MESSAGE, { ...options(), pools: own });
      expect(second).toEqual({ ok: true, statusCode: 204, error: null });
      expect(seenOn).toHaveLength(3);
      // The second request went on the first one's connection, and once more on another.
      expect(seenOn[1] === seenOn[0]).toBe(true);
      expect(seenOn[2] === seenOn[1]).toBe(false);
    } finally {
      own.close();
    }
  });
});

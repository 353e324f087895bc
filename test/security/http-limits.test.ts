// OWASP API4 (unrestricted resource consumption) at the HTTP edge: the server limits of
// src/http/server-limits.ts (slow clients, header size), the request time-out (REQUEST_TIMEOUT_MS)
// and the body size limit, each against the real app on a server built as src/server.ts builds it.
import { connect, type Socket } from 'node:net';
import type { Context, Next } from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETRY_AFTER_SECONDS } from '../../src/domain/errors.ts';
import { createHttpServer, DEFAULT_SERVER_LIMITS } from '../../src/http/server-limits.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { rawExchange, type SecurityApp, startSecurityApp } from './security-app.ts';

const kind = DB_KINDS[0];

describe('server limits in production', () => {
  it('gives slow clients 10 s for the head and 30 s for the whole request, checked every second', () => {
    const server = createHttpServer(() => {});
    expect(server.headersTimeout).toBe(10_000);
    expect(server.requestTimeout).toBe(30_000);
    expect(server.keepAliveTimeout).toBe(5_000);
    expect(server.timeout).toBe(30_000);
    expect(DEFAULT_SERVER_LIMITS.maxUnreadOutputBytes).toBe(4 * 1024 * 1024);
    expect(server.maxHeadersCount).toBe(100);
    expect(DEFAULT_SERVER_LIMITS.maxHeaderSize).toBe(16 * 1024);
    expect(DEFAULT_SERVER_LIMITS.connectionsCheckingIntervalMs).toBeLessThanOrEqual(1_000);
  });
});

describe(`slow and oversized clients on ${kind}`, () => {
  let s: SecurityApp;
  beforeAll(async () => {
    s = await startSecurityApp(kind, {
      limits: {
        ...DEFAULT_SERVER_LIMITS,
        headersTimeoutMs: 500,
        requestTimeoutMs: 1_000,
        connectionsCheckingIntervalMs: 100,
      },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers 408 and disconnects a client that trickles its headers (slowloris)', async () => {
    const trickle = ['GET /healthz HTTP/1.1\r\nHost: localhost\r\n'];
    for (let i = 0; i < 40; i++) trickle.push(`X-Slow-${i}: x\r\n`);
    const { response, closed, ms } = await rawExchange(s.port, trickle, { gapMs: 100 });
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(closed).toBe(true);
    // Well before the 4 s the trickle would have lasted.
    expect(ms).toBeLessThan(2_500);
  });

  it('answers 408 and disconnects a client that trickles its body', async () => {
    const head =
      'POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n';
    const body = Array.from({ length: 40 }, () => ' ');
    const { response, closed, ms } = await rawExchange(s.port, [head, '{', ...body], { gapMs: 100 });
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(closed).toBe(true);
    expect(ms).toBeLessThan(3_000);
  });

  it('answers 431 to a request head larger than 16 KiB, without reaching the app', async () => {
    const { response } = await rawExchange(s.port, [
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
    ]);
    expect(response).toMatch(/^HTTP\/1\.1 431 /);
    const fine = await fetch(`${s.baseUrl}/healthz`, { headers: { 'X-Padding': 'a'.repeat(8 * 1024) } });
    expect(fine.status).toBe(200);
  });

  it('answers 413 to a JSON body over BODY_LIMIT_BYTES, also on protected operations before any credential check', async () => {
    for (const url of ['/api/v1/auth/register', '/api/v1/nft/create']) {
      const response = await fetch(s.baseUrl + url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'x'.repeat(200 * 1024) }),
      });
      expect(response.status, url).toBe(413);
      expect(await response.json()).toMatchObject({ type: '/problems/payload-too-large', status: 413 });
    }
  });

  it('refuses an oversized form on the OAuth token endpoint and the sign-in form', async () => {
    const big = `grant_type=refresh_token&refresh_token=${'a'.repeat(200 * 1024)}`;
    const token = await fetch(`${s.baseUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: big,
    });
    expect(token.status).toBeGreaterThanOrEqual(400);
    expect(token.status).toBeLessThan(500);
    const login = await fetch(`${s.baseUrl}/interaction/abc/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: big,
    });
    expect(login.status).toBeGreaterThanOrEqual(400);
    expect(login.status).toBeLessThan(500);
  });
});

/**
 * Opens a raw connection that sends `requests` and never reads a byte; resolves with how long the
 * server kept its end open (or `null` when it was still open after `waitMs`).
 */
function neverReading(s: SecurityApp, requests: string, waitMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const started = Date.now();
    let client: Socket | undefined;
    const onConnection = (serverSide: Socket) => {
      if (serverSide.remotePort !== client?.localPort) return;
      s.server.off('connection', onConnection);
      serverSide.once('close', () => {
        clearTimeout(deadline);
        client?.destroy();
        resolve(Date.now() - started);
      });
    };
    s.server.on('connection', onConnection);
    const deadline = setTimeout(() => {
      s.server.off('connection', onConnection);
      client?.destroy();
      resolve(null);
    }, waitMs);
    client = connect(s.port, '127.0.0.1', () => {
      client?.pause();
      client?.write(requests);
    });
  });
}

describe(`clients that never read their responses on ${kind}`, () => {
  let s: SecurityApp;
  let small: SecurityApp;
  // The bundled contract (about 400 KB), more than the kernel's buffers of a loopback connection take
  // once the client's receive window is full.
  const bigGet = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
  beforeAll(async () => {
    s = await startSecurityApp(kind, {
      limits: { ...DEFAULT_SERVER_LIMITS, idleTimeoutMs: 1_000 },
    });
    small = await startSecurityApp(kind, {
      limits: { ...DEFAULT_SERVER_LIMITS, idleTimeoutMs: 60_000, maxUnreadOutputBytes: 64 * 1024 },
    });
  });
  afterAll(async () => {
    await s?.close();
    await small?.close();
  });

  it('13.11: closes a connection whose client stops reading, after the idle time-out', async () => {
    const closedAfter = await neverReading(s, bigGet.repeat(20), 6_000);
    expect(closedAfter).not.toBeNull();
    expect(closedAfter).toBeGreaterThanOrEqual(900);
  });

  it('13.11: closes a connection at once when its unread output passes the cap', async () => {
    const closedAfter = await neverReading(small, bigGet.repeat(20), 4_000);
    expect(closedAfter).not.toBeNull();
    expect(closedAfter).toBeLessThan(2_000);
  });

  it('13.11: keeps serving a client that reads, however large the response', async () => {
    const response = await fetch(`${small.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(64 * 1024);
  });
});

describe(`request time-out and masked failures on ${kind}`, () => {
  let s: SecurityApp;
  let logged = '';
  beforeAll(async () => {
    s = await startSecurityApp(kind, {
      env: { REQUEST_TIMEOUT_MS: '300' },
      // Stand-ins for a handler stuck on a dependency and one failing with an internal message.
      async beforeRouter(ctx: Context, next: Next) {
        if (ctx.get('x-test') === 'hang') await new Promise((resolve) => setTimeout(resolve, 5_000));
        if (ctx.get('x-test') === 'fail') {
          throw new Error('connect ECONNREFUSED postgres://gats:hunter2@db.internal:5432/gats');
        }
        await next();
      },
      logger: createLogger('error', {
        write: (line: string) => {
          logged += line;
        },
      }),
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers 503 problem+json with Retry-After when a request outlives REQUEST_TIMEOUT_MS', async () => {
    const started = Date.now();
    const response = await fetch(`${s.baseUrl}/healthz`, { headers: { 'x-test': 'hang' } });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('retry-after')).toBe(String(RETRY_AFTER_SECONDS));
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.json()).toMatchObject({ type: '/problems/timeout', status: 503 });
  });

  it('answers an unexpected failure with a 500 that reveals nothing, and logs the cause server-side', async () => {
    const response = await fetch(`${s.baseUrl}/healthz`, { headers: { 'x-test': 'fail' } });
    expect(response.status).toBe(500);
    const text = await response.text();
    const body = JSON.parse(text);
    expect(Object.keys(body).sort()).toEqual(['detail', 'instance', 'requestId', 'status', 'title', 'type']);
    expect(body).toMatchObject({
      type: '/problems/internal',
      title: 'Internal server error',
      detail: 'An unexpected error occurred.',
    });
    for (const secret of ['hunter2', 'ECONNREFUSED', 'db.internal', 'postgres', 'at ', '.ts']) {
      expect(text, secret).not.toContain(secret);
    }
    expect(logged).toContain('ECONNREFUSED');
    expect(logged).toContain(body.requestId);
  });
});

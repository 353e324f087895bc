// The real app behind a server built exactly as src/server.ts builds it (createHttpServer and its
// limits), for the tests that need what the shared test helper does not give: raw sockets against
// the server limits, a captured log, or a handler that hangs or fails on purpose.
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Middleware } from 'koa';
import { type AppInstance, buildApp } from '../../src/app.ts';
import { createHttpServer, type ServerLimits } from '../../src/http/server-limits.ts';
import type { Logger } from '../../src/observability/logger.ts';
import { testConfig } from '../helpers/app.ts';
import { migratedDatabase, type TestDatabaseKind } from '../helpers/db.ts';
import { testPasswordHasher } from '../helpers/fixture-passwords.ts';

export interface SecurityAppOptions {
  env?: Record<string, string>;
  logger?: Logger;
  limits?: ServerLimits;
  /** Runs just before the contract router: a stand-in for a handler that hangs or throws. */
  beforeRouter?: Middleware;
}

export interface SecurityApp {
  app: AppInstance;
  server: Server;
  baseUrl: string;
  port: number;
  close(): Promise<void>;
}

export async function startSecurityApp(
  kind: TestDatabaseKind,
  options: SecurityAppOptions = {},
): Promise<SecurityApp> {
  const database = await migratedDatabase(kind);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gats-security-'));
  let handle: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => {
    response.statusCode = 503;
    response.end();
  };
  const server = createHttpServer((request, response) => handle(request, response), options.limits);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  const config = testConfig(port, dataDir, database, { LOG_LEVEL: 'silent', ...options.env });
  const app = await buildApp(config, { logger: options.logger, passwordHasher: testPasswordHasher });
  if (options.beforeRouter) {
    // The contract router is the last middleware of the stack.
    app.koa.middleware.splice(app.koa.middleware.length - 1, 0, options.beforeRouter);
  }
  handle = app.koa.callback();
  app.attach(server);
  return {
    app,
    server,
    baseUrl,
    port,
    async close() {
      app.drain();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Writes `chunks` to a raw TCP connection, `gapMs` apart, and resolves with everything the server
 * sent back once it closes the connection (or `timeoutMs` passes) and how long that took.
 */
export function rawExchange(
  port: number,
  chunks: string[],
  options: { gapMs?: number; timeoutMs?: number } = {},
): Promise<{ response: string; closed: boolean; ms: number }> {
  const { gapMs = 0, timeoutMs = 10_000 } = options;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let index = 0;
    let writer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearTimeout(writer);
      clearTimeout(deadline);
      socket.destroy();
      resolve({ response: Buffer.concat(received).toString('latin1'), closed, ms: Date.now() - started });
    };
    const deadline = setTimeout(() => finish(false), timeoutMs);
    const writeNext = () => {
      if (index >= chunks.length || socket.destroyed) return;
      socket.write(chunks[index++]);
      writer = setTimeout(writeNext, gapMs);
    };
    socket.on('connect', writeNext);
    socket.on('data', (data) => received.push(data));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

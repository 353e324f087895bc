// Starts the service: configuration from the environment, the app, the HTTP server, graceful shutdown.
//
// Exit codes (docs/operations/failures.md): 0 stopped cleanly; 78 (EX_CONFIG) a configuration error at
// start-up, one line naming the setting: a bad variable, a missing SECRET_KEY, a SECRET_KEY that does
// not open the stored keys, a database that does not exist or does not answer (DATABASE_URL), Redis
// not answering (REDIS_URL), a PORT (or MANAGEMENT_PORT) in use; 70 (EX_SOFTWARE) a shutdown that passed
// SHUTDOWN_TIMEOUT_SECONDS; 1 any other failure to start.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { enableCompileCache } from 'node:module';
import type { AppInstance } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config/index.ts';
import { managementHandler } from './http/management.ts';
import { createHttpServer } from './http/server-limits.ts';

// V8's compiled code of the service's modules (all loaded below, by the dynamic import of app.ts) is
// kept on disk (NODE_COMPILE_CACHE, else the temporary directory; NODE_DISABLE_COMPILE_CACHE=1 turns it
// off): a restart, after a crash or a deploy, spends ~0.8 s less CPU compiling (measured: 4.7 -> 3.9 s
// for a start on an empty SQLite database). A cache that cannot be written is skipped silently.
enableCompileCache();

const EX_CONFIG = 78;
const EX_SOFTWARE = 70;

const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

function configurationError(message: string): never {
  process.stderr.write(`Configuration error: ${message}\n`);
  process.exit(EX_CONFIG);
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) configurationError(error.message);
    throw error;
  }
  let app: AppInstance;
  try {
    // Loaded after the configuration is read: a configuration error is reported in ~0.3 s, before
    // the whole service (oidc-provider, the ORM, the contract) is imported.
    const { buildApp } = await import('./app.ts');
    app = await buildApp(config);
  } catch (error) {
    if (error instanceof ConfigError) configurationError(error.message);
    throw error;
  }

  let stopping = false;
  const handle = app.koa.callback();
  // Slow-client and header-size protection: see src/http/server-limits.ts.
  const server = createHttpServer((request: IncomingMessage, response: ServerResponse) => {
    // While draining, every answer (also to a request that arrived before SIGTERM) tells a
    // keep-alive client to reconnect, to another instance.
    const writeHead = response.writeHead;
    response.writeHead = function closingWriteHead(this: ServerResponse, ...args: unknown[]) {
      if (stopping) this.setHeader('Connection', 'close');
      return (writeHead as (...rest: unknown[]) => ServerResponse).apply(this, args);
    } as typeof response.writeHead;
    void handle(request, response);
  });
  app.attach(server);
  // 32.6: probes and scrapes on their own listener when MANAGEMENT_PORT is set (src/http/management.ts).
  const management = config.management && {
    server: createHttpServer(managementHandler(handle)),
    host: config.management.host ?? app.listenHost,
    port: config.management.port,
  };

  const port = await listenOrExit(app, server, 'PORT', config.port, app.listenHost);
  const managementPort =
    management &&
    (await listenOrExit(app, management.server, 'MANAGEMENT_PORT', management.port, management.host));
  // The one start-up line an operator reads (no secrets: the database kind, not its URL).
  app.logger.info(
    {
      version: VERSION,
      database: config.databaseUrl ? 'postgresql' : 'sqlite',
      redis: config.redisUrl ? 'on' : 'off',
      publicUrl: config.publicUrl,
      host: app.listenHost,
      port,
      listening: `${app.listenHost}:${port}`,
      ...(management ? { management: `${management.host}:${managementPort}` } : {}),
    },
    'listening',
  );

  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Whatever is stuck (a dead database, a client that never reads), the process ends, and the log
    // says what it was waiting for.
    let waitingFor = 'drain';
    setTimeout(() => {
      app.logger.error(
        { shutdownTimeoutSeconds: config.shutdownTimeoutSeconds, waitingFor: app.closing() ?? waitingFor },
        'shutdown took longer than SHUTDOWN_TIMEOUT_SECONDS: exiting anyway',
      );
      process.exit(EX_SOFTWARE);
    }, config.shutdownTimeoutSeconds * 1000);
    app.logger.info({ signal }, 'shutting down: draining connections');
    // No new connections; /readyz answers 503 meanwhile (the app is draining).
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const forced = setTimeout(() => {
      app.logger.warn('grace period over: closing remaining connections');
      server.closeAllConnections();
    }, config.shutdownGraceMs);
    forced.unref();
    await app.drain(); // committed events delivered, then WebSockets closed with 1001: clients resume elsewhere
    server.closeIdleConnections();
    waitingFor = 'requests';
    await closed; // in-flight requests answered (each with Connection: close)
    clearTimeout(forced);
    // Probes were answered until now (/readyz: 503 while draining).
    if (management) {
      waitingFor = 'probes';
      const managementClosed = new Promise<void>((resolve) => management.server.close(() => resolve()));
      management.server.closeAllConnections();
      await managementClosed;
    }
    await app.close();
    app.logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/**
 * Listens on `host:port`; returns the port bound. A port in use or not allowed ends start-up as a
 * configuration error naming `setting`.
 */
async function listenOrExit(
  app: AppInstance,
  server: Server,
  setting: string,
  port: number,
  host: string,
): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await app.close().catch(() => undefined);
    const code = (error as { code?: string }).code;
    if (code === 'EADDRINUSE')
      configurationError(`${setting} ${port} is already in use on ${host}; set ${setting} to a free port`);
    if (code === 'EACCES')
      configurationError(
        `${setting} ${port} may not be bound by this user on ${host}; set ${setting} above 1023`,
      );
    throw error;
  }
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

main().catch((error: unknown) => {
  process.stderr.write(
    `Failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});

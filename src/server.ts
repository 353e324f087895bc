// Starts the service: configuration from the environment, the app, the HTTP server, graceful shutdown.
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config/index.ts';
import { createHttpServer } from './http/server-limits.ts';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const app = await buildApp(config);
  // Slow-client and header-size protection: see src/http/server-limits.ts.
  const server = createHttpServer(app.koa.callback());
  app.attach(server);

  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  app.logger.info(
    { port, publicUrl: config.publicUrl, database: config.databaseUrl ? 'postgresql' : config.sqlitePath },
    'listening',
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.logger.info({ signal }, 'shutting down: draining connections');
    const forced = setTimeout(() => {
      app.logger.warn('grace period over: closing remaining connections');
      server.closeAllConnections();
    }, config.shutdownGraceMs);
    forced.unref();
    await app.drain(); // committed events delivered, then WebSockets closed with 1001: clients resume elsewhere
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    app.logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `Failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});

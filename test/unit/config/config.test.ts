// The configuration schema (15.5): defaults, one message line per bad variable naming it, secrets
// never repeated, and the configuration reference's table written from the same schema.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configTable, withConfigTable } from '../../../scripts/lib/config-docs.ts';
import { ConfigError, configSchema, loadConfig } from '../../../src/config/index.ts';

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration schema', () => {
  it('keeps the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: undefined,
      publicUrl: 'http://localhost:3000',
      databaseUrl: undefined,
      redisUrl: undefined,
      seedDemo: 'auto',
      logLevel: 'info',
      bodyLimitBytes: 102_400,
      trustProxy: false,
      corsOrigins: [],
      secretKey: undefined,
      rateLimit: { requestsPerWindow: 600, windowSeconds: 60, loginPerWindow: 20 },
      readCache: { maxEntries: 10_000, maxMegabytes: 64 },
    });
    expect(config.sqlitePath).toBe(`${config.dataDir}/gats.sqlite`);
  });

  it('reads values, treats an empty variable as unset, derives PUBLIC_URL from PORT', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '',
      TRUST_PROXY: 'true',
      CORS_ORIGINS: ' https://a.example.com ,,https://b.example.com',
      DATABASE_URL: 'postgres://u:p@db:5432/gats',
    });
    expect(config).toMatchObject({
      port: 8080,
      host: undefined,
      publicUrl: 'http://localhost:8080',
      trustProxy: true,
      corsOrigins: ['https://a.example.com', 'https://b.example.com'],
      databaseUrl: 'postgres://u:p@db:5432/gats',
    });
    expect(loadConfig({ PUBLIC_URL: 'https://game.example.com/' }).publicUrl).toBe(
      'https://game.example.com',
    );
  });

  it('15.5: names every bad variable at once, one line each, with its range or allowed values', () => {
    const message = errorOf({
      PORT: '70000',
      LOG_LEVEL: 'loud',
      WS_MAX_SUBSCRIPTIONS: '1.5',
      TRUST_PROXY: 'yes',
    });
    expect(message.split('\n')).toEqual([
      'PORT must be an integer from 0 to 65535; got "70000"',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; got "loud"',
      'TRUST_PROXY must be one of true, false; got "yes"',
      'WS_MAX_SUBSCRIPTIONS must be an integer from 1 to 1000; got "1.5"',
    ]);
    expect(errorOf({ READ_CACHE_MB: 'lots' })).toBe(
      'READ_CACHE_MB must be an integer from 1 to 4096; got "lots"',
    );
    expect(errorOf({ PUBLIC_URL: 'game.example.com' })).toBe(
      'PUBLIC_URL must be a http: or https: URL; got "game.example.com"',
    );
  });

  it('15.5: never repeats the value of a secret variable in its message', () => {
    const secret = 'postgres-password-in-a-url';
    const message = errorOf({
      DATABASE_URL: `mysql://root:${secret}@db/gats`,
      REDIS_URL: `http://:${secret}@redis`,
      SECRET_KEY: secret.slice(0, 20),
    });
    expect(message.split('\n')).toEqual([
      'DATABASE_URL must be a postgres: or postgresql: URL',
      'REDIS_URL must be a redis: or rediss: URL',
      'SECRET_KEY must be at least 32 characters',
    ]);
    expect(message).not.toContain(secret.slice(0, 20));
  });

  it('15.5: the configuration reference (docs/operations/configuration.md) is the schema, one row per variable', () => {
    const page = readFileSync(new URL('../../../docs/operations/configuration.md', import.meta.url), 'utf8');
    expect(withConfigTable(page)).toBe(page);
    const table = configTable();
    for (const name of Object.keys(configSchema.shape)) expect(table).toContain(`| \`${name}\` |`);
    expect(table).toContain('| `PORT` | `3000` | 0 … 65535 | HTTP and WebSocket port |');
  });
});

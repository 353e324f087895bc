// The WebSocket settings added for findings 13.2, 13.5 and 13.13: defaults, and bad values refused at
// start-up with a message naming the variable.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.ts';

describe('WebSocket configuration', () => {
  it('13.13: allows browser origins from PUBLIC_URL and CORS_ORIGINS unless WS_ALLOWED_ORIGINS is set', () => {
    expect(
      loadConfig({ PUBLIC_URL: 'https://Game.Example.com/', CORS_ORIGINS: 'https://admin.example.com' }).ws
        .allowedOrigins,
    ).toEqual(['https://game.example.com', 'https://admin.example.com']);
    expect(loadConfig({ PORT: '3000' }).ws.allowedOrigins).toEqual(['http://localhost:3000']);
    expect(
      loadConfig({ WS_ALLOWED_ORIGINS: 'https://a.example.com, http://127.0.0.1:8080' }).ws.allowedOrigins,
    ).toEqual(['https://a.example.com', 'http://127.0.0.1:8080']);
    for (const bad of ['*', 'a.example.com', 'https://a.example.com/path', 'ftp://a.example.com'])
      expect(() => loadConfig({ WS_ALLOWED_ORIGINS: bad }), bad).toThrow(/WS_ALLOWED_ORIGINS/);
  });

  it('13.2, 13.5: has documented defaults for the replay and per-user caps, validated', () => {
    const { ws } = loadConfig({});
    expect(ws).toMatchObject({
      maxConnectionsPerUser: 200,
      maxReplayEvents: 10_000,
      maxReplaysPerKey: 2,
      maxReplaysPerUser: 4,
    });
    for (const name of [
      'WS_MAX_CONNECTIONS_PER_USER',
      'WS_MAX_REPLAY_EVENTS',
      'WS_MAX_REPLAYS_PER_KEY',
      'WS_MAX_REPLAYS_PER_USER',
    ]) {
      expect(() => loadConfig({ [name]: '0' })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: 'many' })).toThrow(name);
    }
  });
});

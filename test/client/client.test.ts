// Issue 38: the official TypeScript client (clients/typescript) against the real service, on both
// databases, one app each for the three parts: REST (rest.ts), the events client (events.ts) and
// webhook verification of real deliveries (webhooks.ts). Every answer and WebSocket message the
// client receives is checked against the contracts (fixture.ts).
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe } from 'vitest';
import { DB_KINDS, startTestApp } from '../helpers/app.ts';
import { httpUser } from '../helpers/ledger-fixtures.ts';
import { eventTests } from './events.ts';
import type { SharedApp } from './fixture.ts';
import { restTests } from './rest.ts';
import { webhookTests } from './webhooks.ts';

describe.each(DB_KINDS)('the official TypeScript client against the service (%s)', (kind) => {
  let shared: SharedApp | undefined;
  const app = () => shared as SharedApp;

  beforeAll(async () => {
    const t = await startTestApp(kind, {
      // A shallow replay limit, so that a resume a few events back needs the REST catch-up.
      WS_MAX_REPLAY_EVENTS: '6',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
    });
    const sockets = new Set<Duplex>();
    t.server.on('upgrade', (_request, socket: Duplex) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    const [player, friend, watcher] = [await httpUser(t), await httpUser(t), await httpUser(t)];
    shared = { t, player, friend, watcher, sockets };
  });
  afterAll(async () => {
    await shared?.t.close();
  });

  describe('REST', () => restTests(app));
  describe('events', () => eventTests(app));
  describe('webhooks', () => webhookTests(app));
});

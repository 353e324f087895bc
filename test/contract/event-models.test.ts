// The generated event models (generated/asyncapi/models, Modelina interfaces plus the per-channel
// unions of channels.ts) must describe the frames a real run exchanges: every frame both ways on
// both channels, collected from the app, is type-checked by strict tsc against its channel's union
// (object literals: a renamed or undeclared property, a missing one or an undeclared `null` fails),
// and a deliberately wrong frame must be rejected, so the check is known to bite. The models are
// interfaces of the wire format (raw property names), so a frame round-trips as JSON unchanged.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import type { ServerMessage, TestSocket } from '../helpers/ws.ts';
import {
  createWorld,
  mintNft,
  openSocket,
  postPrice,
  TEST_ENV,
  transfer,
  type World,
} from '../integration/events/world.ts';

const modelsIndex = fileURLToPath(new URL('../../generated/asyncapi/models/index.ts', import.meta.url));
const tscCli = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

interface Exchange {
  client: Record<string, unknown>[];
  server: ServerMessage[];
}

let t: TestApp;
let w: World;
const frames: Record<'events' | 'assetSubscriptions', Exchange> = {
  events: { client: [], server: [] },
  assetSubscriptions: { client: [], server: [] },
};

/** Sends a frame and keeps it. */
function send(socket: TestSocket, exchange: Exchange, frame: Record<string, unknown>): void {
  exchange.client.push(frame);
  socket.send(frame);
}

beforeAll(async () => {
  t = await startTestApp('sqlite', TEST_ENV);
  w = await createWorld(t);
  const events = await openSocket(t, w.player);
  const assets = await openSocket(t, w.player, '/assets/subscribe');
  const ws = frames.events;
  const as = frames.assetSubscriptions;

  // /ws: a resumed subscription (replay, then `replayed`), live events of every kind, ping,
  // unsubscribe, and a frame the service rejects.
  send(events, ws, { type: 'subscribe', requestId: 'all', lastEventId: '0' });
  const subscribed = await events.next((m) => m.type === 'subscribed');
  await events.next((m) => m.type === 'replayed');
  // /assets/subscribe: the seed's {type, walletId, assetId}.
  send(assets, as, { type: 'subscribe', walletId: w.player.wallet, assetId: 'gold' });
  await assets.next((m) => m.type === 'subscribed');

  await mintNft(w, w.player);
  await transfer(w, w.player, 'gold', w.other.wallet);
  await postPrice(w, 'gold');
  await events.next((m) => m.type === 'priceUpdate');
  await assets.next((m) => m.type === 'priceUpdate');
  await assets.next((m) => m.type === 'newTransfer');

  send(events, ws, { type: 'ping', requestId: 'p1' });
  await events.next((m) => m.type === 'pong');
  send(events, ws, { type: 'unsubscribe', requestId: 'u1', subscriptionId: subscribed.subscriptionId });
  await events.next((m) => m.type === 'unsubscribed');
  // Frames the contract does not allow (not kept: they are not client messages of the models).
  events.send({ type: 'subscribe', requestId: 'bad', events: ['noSuchEvent'] });
  await events.next((m) => m.type === 'error');
  send(assets, as, { type: 'ping' });
  await assets.next((m) => m.type === 'pong');
  assets.send({ type: 'subscribe', walletId: w.player.wallet });
  await assets.next((m) => m.type === 'error');

  ws.server = [...events.messages];
  as.server = [...assets.messages];
  events.close();
  assets.close();
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const literal = (value: unknown): string => JSON.stringify(value, null, 2);

describe('generated event models (Modelina, generated/asyncapi/models)', () => {
  it('saw every kind of frame the run was built to produce', () => {
    const types = (list: { type?: unknown }[]) => [...new Set(list.map((m) => m.type))].sort();
    expect(types(frames.events.server)).toEqual(
      [
        'error',
        'newNFT',
        'newTransfer',
        'pong',
        'priceUpdate',
        'replayed',
        'subscribed',
        'unsubscribed',
      ].sort(),
    );
    expect(types(frames.events.client)).toEqual(['ping', 'subscribe', 'unsubscribe']);
    expect(types(frames.assetSubscriptions.server)).toEqual(
      expect.arrayContaining(['error', 'newTransfer', 'pong', 'priceUpdate', 'subscribed']),
    );
    expect(types(frames.assetSubscriptions.client)).toEqual(['ping', 'subscribe']);
  });

  it('round-trips every frame unchanged (the models keep the wire names)', () => {
    for (const exchange of Object.values(frames))
      for (const frame of [...exchange.client, ...exchange.server])
        expect(JSON.parse(JSON.stringify(frame))).toEqual(frame);
  });

  it('types every frame with its channel union under strict tsc, and rejects a wrong one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'event-models-'));
    try {
      writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
      writeFileSync(
        join(dir, 'tsconfig.json'),
        literal({
          compilerOptions: {
            strict: true,
            exactOptionalPropertyTypes: true,
            noEmit: true,
            allowImportingTsExtensions: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            verbatimModuleSyntax: true,
            skipLibCheck: true,
            types: [],
          },
          files: ['frames.ts'],
        }),
      );
      const wrong = { ...frames.events.server.find((m) => m.type === 'newTransfer') } as Record<
        string,
        unknown
      >;
      wrong.occurred_at = wrong.occurredAt;
      delete wrong.occurredAt;
      writeFileSync(
        join(dir, 'frames.ts'),
        [
          `import type { AssetSubscriptionsClientMessage, AssetSubscriptionsServerMessage, EventsClientMessage, EventsServerMessage } from ${JSON.stringify(modelsIndex)};`,
          `export const eventsClient: EventsClientMessage[] = ${literal(frames.events.client)};`,
          `export const eventsServer: EventsServerMessage[] = ${literal(frames.events.server)};`,
          `export const assetsClient: AssetSubscriptionsClientMessage[] = ${literal(frames.assetSubscriptions.client)};`,
          `export const assetsServer: AssetSubscriptionsServerMessage[] = ${literal(frames.assetSubscriptions.server)};`,
          // A renamed property must not type-check (tsc fails on an unused expectation otherwise).
          `// @ts-expect-error occurred_at is not the wire name`,
          `export const renamed: EventsServerMessage = ${JSON.stringify(wrong)};`,
          '',
        ].join('\n'),
      );
      const run = spawnSync(process.execPath, [tscCli, '-p', dir], { encoding: 'utf8' });
      expect(run.stdout + run.stderr).toBe('');
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

// Issue 38's proof of the events client against the service as an operator runs it (a child
// process on SQLite): a flood of 10,000 events, a kill -9 of the instance the stream is connected to
// in the middle of delivering them, a restart on the same port and data, and more events after it.
// Every event reaches the handler exactly once and in id order, compared with the REST event log.
// (Across a restore from an older backup: test/integration/events/restore.test.ts, whose
// `npm run watch` runs on this client.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import {
  createGatsClient,
  type GatsEvent,
  readEvents,
  type StreamState,
  streamEvents,
  unwrap,
} from '../../clients/typescript/src/index.ts';
import { nodeWebSocket } from '../../clients/typescript/src/node.ts';
import { freePort } from '../../scripts/lib/children.ts';
import { TEST_SECRET_KEY } from '../helpers/app.ts';
import { demoSession } from '../helpers/demo-session.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';

const root = mkdtempSync(path.join(tmpdir(), 'gats-client-proof-'));
let service: ServiceProcess | undefined;
afterAll(async () => {
  service?.child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

async function until(predicate: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

it('delivers 10,000 events once and in order across a kill -9 and a restart of its instance', async () => {
  const port = await freePort();
  // The same port and data for both lives: the stream reconnects to the restarted instance.
  const env = {
    SECRET_KEY: TEST_SECRET_KEY,
    PORT: String(port),
    DATA_DIR: path.join(root, 'data'),
    RATE_LIMIT_REQUESTS: '100000',
    RATE_LIMIT_USER_REQUESTS: '100000',
  };
  service = await startService(env);
  const base = `http://127.0.0.1:${port}`;
  const alice = await demoSession(base, 'alice');
  const bob = await demoSession(base, 'bob');
  const gats = createGatsClient({
    baseUrl: base,
    token: alice.headers.authorization.replace(/^Bearer /, ''),
    apiKey: alice.headers['x-api-key'],
    retry: { attempts: 8, maxDelayMs: 2000 },
  });

  const received: GatsEvent[] = [];
  const states: StreamState[] = [];
  const stream = streamEvents({
    client: gats,
    auth: 'headers',
    webSocket: nodeWebSocket,
    walletId: bob.wallet,
    events: ['newTransfer'],
    reconnect: { baseDelayMs: 100, maxDelayMs: 1000 },
    onEvent: async (event) => {
      received.push(event);
      // A handler slower than the service: events pile up unhandled when the instance dies.
      if (received.length % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    },
    onState: (state) => states.push(state),
  });
  await until(() => stream.state === 'live', 'live');
  const start = (await unwrap(gats.GET('/api/v1/events', { params: { query: { limit: 1 } } }))).newestEventId;

  /**
   * 200 batch transfers of 50 legs each from alice to bob: 10,000 newTransfer events. Each batch has
   * its own Idempotency-Key, sent again until it is answered (the instance may be down): a batch
   * applied before the kill answers its first result, so every batch is applied exactly once.
   */
  const flood = async () => {
    for (let batch = 0; batch < 200; batch++) {
      const legs = Array.from({ length: 50 }, () => ({
        assetId: 'gold',
        from: alice.wallet,
        to: bob.wallet,
        amount: '0.01',
      }));
      const deadline = Date.now() + 120_000;
      for (;;) {
        try {
          await unwrap(
            gats.POST('/api/v1/transfer/batch', {
              body: { legs },
              params: { header: { 'Idempotency-Key': `proof-${batch}` } },
            }),
          );
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
    }
  };

  const flooding = flood();
  // Killed in the middle of the flood, while the stream is delivering: no close frame, nothing
  // flushed, writes in flight.
  await until(() => received.length >= 1500, 'the first events');
  service.child.kill('SIGKILL');
  await new Promise((resolve) => service?.child.once('exit', resolve));
  await until(() => states.at(-1) !== 'live', 'the stream to notice');
  service = await startService(env);
  await flooding;

  const expected: string[] = [];
  for await (const event of readEvents(gats, {
    after: start ?? undefined,
    walletId: bob.wallet,
    events: ['newTransfer'],
  }))
    expected.push(event.id);
  expect(expected).toHaveLength(10_000);
  await until(() => received.length >= expected.length, 'every event');
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(received.map((event) => event.id)).toEqual(expected);
  expect(states).toContain('offline');
  await stream.stop();
  expect(await service.stop()).toBe(0);
}, 300_000);

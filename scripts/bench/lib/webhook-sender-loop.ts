// What the webhook sender thread buys (run directly: node scripts/bench/lib/webhook-sender-loop.ts):
// 50 loops send signed webhooks for 3 s to a receiver in a worker thread, first on this thread
// (sender.ts, as the dispatcher did before send-thread.ts), then through the sender thread; printed:
// requests per second and this event loop's delay p50/p99 (perf_hooks), which is what the API and the
// WebSocket fan-out would wait for. Twice each, alternating.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { createSendThread } from '../../../src/webhooks/send-thread.ts';
import { createPools, sendWebhook } from '../../../src/webhooks/sender.ts';

const receiver = new Worker(new URL('./webhook-receiver-worker.ts', import.meta.url));
const port: number = await new Promise((r) =>
  receiver.on('message', (m) => {
    if ('port' in m) r(m.port);
  }),
);
const url = `http://127.0.0.1:${port}/h`;
const secrets = [`whsec_${Buffer.alloc(32, 7).toString('base64')}`];
const body = JSON.stringify({
  id: '1',
  type: 'priceUpdate',
  occurredAt: new Date().toISOString(),
  data: { x: 'y'.repeat(200) },
});
const opts = { allowLoopback: true, allowedNetworks: [], timeoutMs: 5000, userAgent: 'x' };
async function run(mode: string, send: () => Promise<unknown>) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  let done = 0;
  const end = Date.now() + 3000;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (Date.now() < end) {
        await send();
        done++;
      }
    }),
  );
  h.disable();
  console.log(
    mode,
    'req/s',
    Math.round(done / 3),
    'loop delay p50/p99 ms',
    (h.percentile(50) / 1e6).toFixed(1),
    (h.percentile(99) / 1e6).toFixed(1),
  );
}
const pools = createPools();
const thread = createSendThread();
for (let i = 0; i < 2; i++) {
  await run('main  ', () =>
    sendWebhook(url, { id: 'whd_01JD4C5Q6R7S8T9V0W1X2Y3Z4A', body, secrets }, { ...opts, pools }),
  );
  await run('thread', () => thread.send(url, { id: 'whd_01JD4C5Q6R7S8T9V0W1X2Y3Z4A', body, secrets }, opts));
}
pools.close();
await thread.close();
await receiver.terminate();
